// What the sweep database records of a job: its start (and, for a new trial, the trial), its end
// with the trial's per-epoch metrics, the groups of a job on merged groups, and what --resume reads
// back. Plain values, so the coordinator's state decides them without touching the database and a
// test compares them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace phalanx::sweep {

// A job handed to a worker group: train `trial` to `rung`.
struct JobStart {
  std::int64_t job_id = 0;  // numbered by the coordinator, on from the database's last job
  int trial = 0;
  int rung = 0;
  double budget = 0;
  int worker = 0;
  std::string device;
  double started = 0;  // seconds since the Unix epoch
  // The dispatch rule's view when the job was given out (dispatch.hpp).
  double estimate_seconds = 0;
  double faster_group_seconds = -1;  // -1: no faster group (stored as NULL)
  friend bool operator==(const JobStart&, const JobStart&) = default;
};

// How the trial's values were decided (trial_proposals.hpp), for the proposals table.
struct ProposalRecord {
  std::string method;      // random | grid | tpe
  int model_rung = -1;     // tpe: the rung fitted on (-1: stored as NULL)
  std::string fitted_on;   // JSON list of the trial ids whose results it was fitted on
  std::string values;      // JSON list of [key, YAML text]: the values exactly as sent to the trial
};

// The trial a job starts when it is the trial's first.
struct NewTrial {
  std::string parameters;  // JSON of the sampled values
  std::string config;      // resolved training config (YAML)
  std::uint64_t seed = 0;
  std::string run_dir;
  std::optional<ProposalRecord> proposal;
};

// One epoch of a trial's summary.json history.
struct EpochRecord {
  std::int64_t epoch = 0;
  double test_accuracy = 0, test_loss = 0, train_loss = 0, epoch_seconds = 0;
  friend bool operator==(const EpochRecord&, const EpochRecord&) = default;
};

struct JobFinish {
  std::int64_t job_id = 0;
  int trial = 0;
  int rung = 0;
  double budget = 0;
  int worker = 0;
  std::string device;
  double metric = 0;
  std::int64_t start_step = 0, end_step = 0;
  std::string resumed_from;
  double finished = 0;
  double train_seconds = 0;  // inside Trainer::run
  double images_per_sec = 0;
  std::vector<EpochRecord> history;
  bool completed = false;  // the top rung: the trial is done
  double worker_speed = 0;
  friend bool operator==(const JobFinish&, const JobFinish&) = default;
};

// One worker group of a job trained on merged groups.
struct JobGroup {
  int worker = 0;
  std::vector<int> ranks;  // its world ranks
  friend bool operator==(const JobGroup&, const JobGroup&) = default;
};

// What --resume rebuilds the scheduler from, as the database has it after the jobs a kill left
// running were marked interrupted.
struct RecordedProgress {
  struct RungResult {
    int trial = 0;
    int rung = 0;
    double metric = 0;
  };
  std::vector<int> trials;                       // every trial started
  std::vector<std::pair<int, int>> promotions;   // (trial, rung) of every job above rung 0
  std::vector<RungResult> rung_results;          // every rung a trial finished
  std::vector<std::pair<int, int>> interrupted;  // (trial, rung) to requeue, in job order
  std::vector<int> failed_trials;                // trials whose status is failed
  // Every recorded proposal's values, (key, YAML text) in space order, by trial.
  std::map<int, std::vector<std::pair<std::string, std::string>>> parameters;
};

}  // namespace phalanx::sweep
