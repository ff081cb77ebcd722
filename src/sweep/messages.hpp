// The coordinator's side of the sweep protocol (protocol.hpp): a group leader's JSON text decoded
// once into typed messages, and the coordinator's job, handover and stop messages encoded. Past
// this edge the coordinator sees no JSON.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "phalanx/sweep/job_records.hpp"

namespace phalanx::sweep {

// A group is up: its ranks (world ranks, its leader first) and what they train on.
struct Hello {
  int worker = 0;
  std::vector<int> ranks;
  bool gpu = false;
  std::string device;
  int threads = 1;
  std::string host;
};

// Where a job's training started and ended, and the checkpoint it resumed from ("" for none).
struct JobSteps {
  std::int64_t start_step = 0, end_step = 0;
  std::int64_t target_step = 0;  // the step its rung ends at (end_step when the worker did not say)
  std::string resumed_from;
  friend bool operator==(const JobSteps&, const JobSteps&) = default;
};

// The job reached its rung.
struct JobResult {
  int worker = 0;
  std::int64_t job_id = 0;
  double metric = 0;
  JobSteps steps;
  double train_seconds = 0;
  double images_per_sec = 0;
  std::vector<EpochRecord> history;
};

// The trial failed (bad input on a one-rank group, or a loss that turned non-finite).
struct JobFailed {
  int worker = 0;
  std::int64_t job_id = 0;
  std::string message;
};

// A stop signal ended the job after a step, with a checkpoint there.
struct JobInterrupted {
  int worker = 0;
  std::int64_t job_id = 0;
  int signal = 0;
  JobSteps steps;
};

// The job stopped after a step, with a checkpoint, for groups waiting to join it (no idle tail).
struct JobHandedOver {
  int worker = 0;
  std::int64_t job_id = 0;
  JobSteps steps;
};

using WorkerMessage = std::variant<Hello, JobResult, JobFailed, JobInterrupted, JobHandedOver>;

// Throws an Error naming the missing or mistyped field.
WorkerMessage decode_worker_message(const std::string& text);

// Train `trial` to `rung` (`budget`) with `assignments` (search_space.hpp); `ranks`: the world
// ranks of a job on merged groups, reporting group first (empty for a group on its own).
std::string job_message(std::int64_t job_id, int trial, int rung, double budget,
                        const std::vector<std::string>& assignments, const std::vector<int>& ranks);
std::string handover_message(std::int64_t job_id);
std::string stop_message();

}  // namespace phalanx::sweep
