// What the sweep's state (sweep_state.hpp) asks of the coordinator loop, in the order it is to be
// done: commit to the database, send to a group's leader, show a line. The loop executes them as
// they come, so a job row is committed before the job is sent and a result before the jobs that
// follow from it; a test reads them as they are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "messages.hpp"
#include "phalanx/sweep/job_records.hpp"
#include "phalanx/sweep/pbt.hpp"
#include "phalanx/sweep/trial_proposals.hpp"

namespace phalanx::sweep {

// ---- commits (ResultsStore), one transaction each ----

struct RecordWorker {
  int worker = 0;
  std::vector<int> ranks;
  std::string device;
  int threads = 1;
  std::string host;
  friend bool operator==(const RecordWorker&, const RecordWorker&) = default;
};

// The trial's own row comes with its first job, with the parameters the state proposed for it.
struct RecordJobStart {
  JobStart job;
  bool new_trial = false;
  std::optional<Proposal> proposal;  // a new trial's parameters
  friend bool operator==(const RecordJobStart&, const RecordJobStart&) = default;
};

struct RecordJobDone {
  JobFinish job;
  friend bool operator==(const RecordJobDone&, const RecordJobDone&) = default;
};

struct RecordJobFailed {
  std::int64_t job_id = 0;
  int trial = 0;
  std::string message;
  double finished = 0;
  friend bool operator==(const RecordJobFailed&, const RecordJobFailed&) = default;
};

struct RecordJobInterrupted {
  std::int64_t job_id = 0;
  int trial = 0;
  JobSteps steps;
  double finished = 0;
  friend bool operator==(const RecordJobInterrupted&, const RecordJobInterrupted&) = default;
};

// The job handed over and its successor on the merged groups, committed together.
struct RecordHandover {
  std::int64_t job_id = 0;
  JobSteps steps;
  double finished = 0;
  JobStart next;
  std::vector<JobGroup> groups;
  friend bool operator==(const RecordHandover&, const RecordHandover&) = default;
};

// A joined job's group is gone while it held this job (sweep --join): the job ends as interrupted
// (no end step: none was reported) and its trial is requeued, to go on from its newest checkpoint.
struct RecordJobLost {
  std::int64_t job_id = 0;
  int trial = 0;
  double finished = 0;
  friend bool operator==(const RecordJobLost&, const RecordJobLost&) = default;
};

// ---- messages to a group's leader ----

// `ranks`: the world ranks of a job on merged groups (empty for a group on its own).
struct SendJob {
  int worker = 0;
  std::int64_t job_id = 0;
  int trial = 0;
  int rung = 0;
  double budget = 0;
  std::vector<int> ranks;
  friend bool operator==(const SendJob&, const SendJob&) = default;
};

struct SendHandover {
  int worker = 0;
  std::int64_t job_id = 0;
  friend bool operator==(const SendHandover&, const SendHandover&) = default;
};

// A joined job's group leaves before the sweep ends (its job is leaving).
struct SendStop {
  int worker = 0;
  friend bool operator==(const SendStop&, const SendStop&) = default;
};

// ---- lines for the log; `elapsed`: seconds since this start of the sweep ----

struct ShowJobDone {
  double elapsed = 0;
  int trial = 0, rung = 0;
  double budget = 0, metric = 0;
  std::vector<int> workers;  // the groups that trained it, the reporting one first
  bool gpu = false;
  int threads = 1;
  double seconds = 0;
  std::int64_t start_step = 0;
  friend bool operator==(const ShowJobDone&, const ShowJobDone&) = default;
};

struct ShowJobInterrupted {
  double elapsed = 0;
  int trial = 0, rung = 0;
  std::int64_t end_step = 0;
  int worker = 0;
  friend bool operator==(const ShowJobInterrupted&, const ShowJobInterrupted&) = default;
};

struct ShowJobHandedOver {
  double elapsed = 0;
  int trial = 0, rung = 0;
  std::int64_t end_step = 0;
  std::vector<int> workers;  // the merged groups, the reporting one first
  int ranks = 0;
  double estimate_seconds = 0;
  std::optional<double> merged_efficiency;  // once merged jobs of this kind have been measured
  friend bool operator==(const ShowJobHandedOver&, const ShowJobHandedOver&) = default;
};

// An idle group goes to join a running trial.
struct ShowJoin {
  double elapsed = 0;
  int worker = 0;
  std::vector<int> worker_ranks;
  int trial = 0;
  std::vector<int> trial_workers;
  double seconds_left = 0;
  int ranks = 0;  // ranks on the trial once the groups on their way have joined
  friend bool operator==(const ShowJoin&, const ShowJoin&) = default;
};

// A trial finished (or stopped) while groups waited to join it: they are free again.
struct ShowEndedBeforeHandover {
  double elapsed = 0;
  int trial = 0;
  std::vector<int> workers;
  friend bool operator==(const ShowEndedBeforeHandover&, const ShowEndedBeforeHandover&) = default;
};

// A job joined the sweep with these groups, or its groups left (`requeued`: the trials they
// held, to go on elsewhere).
struct ShowJoinedJob {
  double elapsed = 0;
  int joined_job = 0;
  std::vector<int> workers;
  bool left = false;
  std::vector<int> requeued;
  friend bool operator==(const ShowJoinedJob&, const ShowJoinedJob&) = default;
};

struct ShowJobFailed {
  double elapsed = 0;
  int trial = 0;
  int worker = 0;
  std::string message;
  friend bool operator==(const ShowJobFailed&, const ShowJobFailed&) = default;
};

struct ShowStopBegun {
  double elapsed = 0;
  int signal = 0;
  int running = 0;  // jobs still to stop
  friend bool operator==(const ShowStopBegun&, const ShowStopBegun&) = default;
};

// What one message changed, shown after the jobs it led to were handed out: the job's line (with
// the rungs, busy groups and best trial as they are now), then the groups that go to join.
struct ShowProgress {
  std::optional<std::variant<ShowJobDone, ShowJobInterrupted, ShowJobHandedOver>> headline;
  std::vector<std::variant<ShowEndedBeforeHandover, ShowJoin, ShowJoinedJob>> notes;
  friend bool operator==(const ShowProgress&, const ShowProgress&) = default;
};

// scheduler: pbt, after a trial's result at `finished.interval` (its metric), a failure or a
// resume: the finished trial's end-of-interval checkpoint kept for trials that may copy it, and the
// steps decided now (pbt.hpp), an exploit's copy of its donor's kept checkpoint in place before
// the step is recorded (pbt_lineage.hpp).
struct RecordPbtStep {
  std::optional<PbtStep> finished;
  std::vector<PbtStep> next;
  friend bool operator==(const RecordPbtStep&, const RecordPbtStep&) = default;
};

using Command =
    std::variant<RecordWorker, RecordJobStart, RecordJobDone, RecordJobFailed, RecordJobInterrupted,
                 RecordHandover, SendJob, SendHandover, ShowJobFailed, ShowStopBegun, ShowProgress,
                 RecordPbtStep, RecordJobLost, SendStop>;

}  // namespace phalanx::sweep
