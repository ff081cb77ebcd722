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
//   proposals     how each trial's values were decided: method, the results it was fitted on,
//                 the values exactly as sent (what --resume restores)
//   sweep         key/value facts about the sweep (its definition, for --resume checks)
// Rank lists are stored as text ("0" or "1,2"), as sweeps written before have them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "phalanx/sweep/database.hpp"
#include "phalanx/sweep/job_records.hpp"

namespace phalanx::sweep {

class ResultsStore {
 public:
  explicit ResultsStore(const std::string& path);
  const Database& database() const { return database_; }

  bool has_trials() const;
  // When the sweep has trials, every one of them failed and none recorded a result at any rung:
  // the lowest trial's failure message (a problem they all share, such as the base config's data).
  std::optional<std::string> failure_of_every_trial() const;
  std::optional<std::string> meta(const std::string& key) const;
  void set_meta(const std::string& key, const std::string& value);
  void register_worker(int worker, const std::vector<int>& ranks, const std::string& device, int threads,
                       const std::string& host);
  // The highest job id recorded (0 when none): the coordinator numbers its jobs on from it.
  std::int64_t last_job_id() const;
  // A job and, when it is the trial's first, the trial.
  void start_job(const JobStart& job, const std::optional<NewTrial>& trial = std::nullopt);
  void finish_job(const JobFinish& job);
  void fail_job(std::int64_t job_id, int trial, const std::string& message, double finished);
  // --resume: jobs left running by a kill become 'interrupted' and their trials 'paused' (to be
  // requeued). Returns the interrupted jobs as (trial, rung).
  std::vector<std::pair<int, int>> interrupt_running(double now);
  // A job that a stop signal ended early with a checkpoint at `end_step`: 'interrupted', its trial
  // 'paused', so that --resume requeues it like a job a kill left running.
  // A joined job's group is gone while it held this job (sweep --join): 'interrupted' with no end
  // step (none was reported), its trial paused for the requeue.
  void lose_job(std::int64_t job_id, int trial, double finished);
  void interrupt_job(std::int64_t job_id, int trial, std::int64_t start_step, std::int64_t end_step,
                     const std::string& resumed_from, double finished);
  // --resume: the interrupted jobs that are their trial's latest (not yet taken up again), as
  // (trial, rung) in job order. A job can stay interrupted over several stops before it runs again.
  std::vector<std::pair<int, int>> interrupted_jobs() const;
  // --resume: the trials, promotions, rung results, interrupted jobs and proposals recorded so far.
  RecordedProgress progress() const;
  // No idle tail: a job that stopped after `end_step` with a checkpoint so that idle groups can
  // join its trial becomes 'handed_over', and `next` (the rest of the same rung, resuming from that
  // checkpoint) starts on `groups` (the first one reports it), in one transaction: a kill finds
  // either the old job running or the new one.
  void hand_over_job(std::int64_t job_id, std::int64_t start_step, std::int64_t end_step,
                     const std::string& resumed_from, double finished, const JobStart& next,
                     const std::vector<JobGroup>& groups);
  // The end: trials ASHA did not promote are 'stopped'.
  void stop_paused();

 private:
  void insert_job(const JobStart& job);
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
