// The sweep database (DIR/sweep.db), written only by the coordinator. Each state change is one
// transaction, committed before the coordinator acts on it (sends the job, decides a
// promotion), so after a kill the database says exactly which jobs were in flight.
// Tables (docs/SWEEPS.md has the columns):
//   trials        one row per trial: trial_id, status, rung, budget, metric, config, parameters, ...
//   jobs          one row per assignment of a trial to a worker group (a rung, or its rest after
//                 a kill): steps at start and end, checkpoint resumed from, times, status
//   rung_results  the metric of each trial at the end of each rung it reached
//   epoch_metrics per-epoch test metrics of each trial
//   workers       the worker groups: ranks, device, threads, measured speed
//   job_groups    the groups of a job that ran on merged worker groups (no idle tail)
//   sweep         key/value facts about the sweep (its definition, for --resume checks)
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "phalanx/sweep/database.hpp"

namespace phalanx::sweep {

struct JobStart {
  int trial = 0;
  int rung = 0;
  double budget = 0;
  int worker = 0;
  std::string device;
  double started = 0;  // seconds since the Unix epoch
  bool new_trial = false;
  // For a new trial:
  std::string parameters;  // JSON of the sampled values
  std::string config;      // resolved training config (YAML)
  std::uint64_t seed = 0;
  std::string run_dir;
  // The dispatch rule's view when the job was given out (dispatch.hpp).
  double estimate_seconds = 0;
  double faster_group_seconds = -1;
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
  nlohmann::json history;  // summary.json's per-epoch history
  bool completed = false;  // the top rung: the trial is done
  double worker_speed = 0;
};

// One worker group of a job trained on merged groups.
struct JobGroup {
  int worker = 0;
  std::string ranks;  // its world ranks, "2" or "1,2"
};

class ResultsStore {
 public:
  explicit ResultsStore(const std::string& path);
  const Database& database() const { return database_; }

  bool has_trials() const;
  std::optional<std::string> meta(const std::string& key) const;
  void set_meta(const std::string& key, const std::string& value);
  void register_worker(int worker, const std::string& ranks, const std::string& device, int threads,
                       const std::string& host);
  std::int64_t start_job(const JobStart& job);
  void finish_job(const JobFinish& job);
  void fail_job(std::int64_t job_id, int trial, const std::string& message, double finished);
  // --resume: jobs left running by a kill become 'interrupted' and their trials 'paused' (to be
  // requeued). Returns the interrupted jobs as (trial, rung).
  std::vector<std::pair<int, int>> interrupt_running(double now);
  // A job that a stop signal ended early with a checkpoint at `end_step`: 'interrupted', its trial
  // 'paused', so that --resume requeues it like a job a kill left running.
  void interrupt_job(std::int64_t job_id, int trial, std::int64_t start_step, std::int64_t end_step,
                     const std::string& resumed_from, double finished);
  // --resume: the interrupted jobs that are their trial's latest (not yet taken up again), as
  // (trial, rung) in job order. A job can stay interrupted over several stops before it runs again.
  std::vector<std::pair<int, int>> interrupted_jobs() const;
  // No idle tail: a job that stopped after `end_step` with a checkpoint so that idle groups can
  // join its trial becomes 'handed_over', and `next` (the rest of the same rung, resuming from that
  // checkpoint) starts on `groups` (the first one reports it), in one transaction: a kill finds
  // either the old job running or the new one. Returns the new job's id.
  std::int64_t hand_over_job(std::int64_t job_id, std::int64_t start_step, std::int64_t end_step,
                             const std::string& resumed_from, double finished, const JobStart& next,
                             const std::vector<JobGroup>& groups);
  // The end: trials ASHA did not promote are 'stopped'.
  void stop_paused();

 private:
  std::int64_t insert_job(const JobStart& job);
  // The row of a job that ran and stopped: its status (done, interrupted, handed_over), the steps
  // it trained from and to, the checkpoint it resumed from, and when it ended (its wall time
  // follows). Inside the caller's transaction.
  void end_job(std::int64_t job_id, const std::string& status, std::int64_t start_step, std::int64_t end_step,
               const std::string& resumed_from, double finished);
  // Busy time and job count of the job's groups (its worker and the others in job_groups).
  void add_busy_time(std::int64_t job_id, int worker, double finished);
  Database database_;
};

}  // namespace phalanx::sweep
