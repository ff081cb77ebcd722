// The coordinator's decisions without MPI, a database or a clock: hand-made group messages at
// hand-set times go in, and the exact commands that come out are compared (docs/SWEEPS.md: the
// first jobs, ASHA's promotions, failures, stop signals, --resume's requeue, the dispatch rule
// with a faster busy group, and idle groups joining a running trial).
#include <gtest/gtest.h>

#include <csignal>
#include <sstream>

#include "phalanx/core/error.hpp"
#include "sweep_state.hpp"

using namespace phalanx::sweep;

namespace {

// ASHA over `trials` trials with rungs of `min`, 3 x `min` and 9 x `min` budget units.
phalanx::config::SweepConfig ladder(int trials, double min = 1, bool join_running = false) {
  phalanx::config::SweepConfig sweep;
  sweep.trials = trials;
  sweep.min_budget = min;
  sweep.max_budget = 9 * min;
  sweep.eta = 3;
  sweep.join_running = join_running;
  sweep.join_min_seconds = 10;
  return sweep;
}

Hello cpu_group(int worker, std::vector<int> ranks) {
  return Hello{worker, std::move(ranks), false, "cpu", 1, "host"};
}

// A job that trained its whole rung: from `start_step` to `end_step`, the rung's last step.
JobResult result(int worker, std::int64_t job, double metric, std::int64_t start_step = 0,
                 std::int64_t end_step = 15) {
  return JobResult{worker, job, metric, JobSteps{start_step, end_step, end_step, ""}, 1.0, 100.0, {}};
}

std::string list(const std::vector<int>& values, char separator) {
  std::string text;
  for (const int value : values) {
    if (!text.empty()) text += separator;
    text += std::to_string(value);
  }
  return text;
}

// One line per command with what the tests decide on; numbers the dispatch estimates are checked
// on the records themselves.
struct Describe {
  std::string operator()(const RecordWorker& record) const {
    return "record worker " + std::to_string(record.worker) + " ranks " + list(record.ranks, ',');
  }
  std::string operator()(const RecordJobStart& record) const {
    std::ostringstream text;
    text << "record job " << record.job.job_id << ": trial " << record.job.trial << " rung "
         << record.job.rung << " budget " << record.job.budget << " on worker " << record.job.worker
         << (record.new_trial ? " (new trial)" : "");
    return text.str();
  }
  std::string operator()(const RecordJobDone& record) const {
    std::ostringstream text;
    text << "record job " << record.job.job_id << " done: trial " << record.job.trial << " rung "
         << record.job.rung << " metric " << record.job.metric
         << (record.job.completed ? " (completed)" : "");
    return text.str();
  }
  std::string operator()(const RecordJobFailed& record) const {
    return "record job " + std::to_string(record.job_id) + " failed: trial " + std::to_string(record.trial) +
           ": " + record.message;
  }
  std::string operator()(const RecordJobInterrupted& record) const {
    return "record job " + std::to_string(record.job_id) + " interrupted: trial " +
           std::to_string(record.trial) + " at step " + std::to_string(record.steps.end_step);
  }
  std::string operator()(const RecordHandover& record) const {
    std::vector<int> workers;
    for (const auto& group : record.groups) workers.push_back(group.worker);
    return "record job " + std::to_string(record.job_id) + " handed over at step " +
           std::to_string(record.steps.end_step) + ": job " + std::to_string(record.next.job_id) +
           " on workers " + list(workers, '+');
  }
  std::string operator()(const SendJob& job) const {
    return "send worker " + std::to_string(job.worker) + " job " + std::to_string(job.job_id) + ": trial " +
           std::to_string(job.trial) + " rung " + std::to_string(job.rung) +
           (job.ranks.empty() ? "" : " on ranks " + list(job.ranks, ','));
  }
  std::string operator()(const SendHandover& handover) const {
    return "send worker " + std::to_string(handover.worker) + " handover of job " +
           std::to_string(handover.job_id);
  }
  std::string operator()(const ShowJobFailed& line) const {
    return "show trial " + std::to_string(line.trial) + " failed on worker " + std::to_string(line.worker);
  }
  std::string operator()(const ShowStopBegun& line) const {
    return "show stop by signal " + std::to_string(line.signal) + ", " + std::to_string(line.running) +
           " running";
  }
  std::string operator()(const ShowJobDone& line) const {
    return "done trial " + std::to_string(line.trial) + " rung " + std::to_string(line.rung) + " on " +
           list(line.workers, '+');
  }
  std::string operator()(const ShowJobInterrupted& line) const {
    return "interrupted trial " + std::to_string(line.trial) + " on " + std::to_string(line.worker);
  }
  std::string operator()(const ShowJobHandedOver& line) const {
    return "handed over trial " + std::to_string(line.trial) + " to " + list(line.workers, '+');
  }
  std::string operator()(const ShowJoin& line) const {
    return "worker " + std::to_string(line.worker) + " joins trial " + std::to_string(line.trial) + " on " +
           list(line.trial_workers, '+');
  }
  std::string operator()(const ShowEndedBeforeHandover& line) const {
    return "trial " + std::to_string(line.trial) + " ended before its handover: " + list(line.workers, '+') +
           " free";
  }
  std::string operator()(const RecordPbtStep& record) const {
    std::ostringstream line;
    line << "pbt";
    if (record.finished)
      line << " trial " << record.finished->trial << " interval " << record.finished->interval << " metric "
           << record.finished->metric.value_or(-1);
    line << ":";
    for (const auto& next : record.next) {
      line << " trial " << next.trial;
      if (next.exploited())
        line << " copies " << next.parent_trial << "/" << next.parent_interval;
      else
        line << " continues";
    }
    return line.str();
  }
  std::string operator()(const RecordJobLost& record) const {
    return "record job " + std::to_string(record.job_id) + " lost: trial " + std::to_string(record.trial);
  }
  std::string operator()(const SendStop& stop) const { return "send worker " + std::to_string(stop.worker) + " stop"; }
  std::string operator()(const ShowJoinedJob& line) const {
    std::string text = "joined job " + std::to_string(line.joined_job) + ": " + list(line.workers, '+') +
                       (line.left ? " left" : " join");
    if (!line.requeued.empty()) text += ", requeued " + list(line.requeued, '+');
    return text;
  }
  std::string operator()(const ShowProgress& progress) const {
    std::string text = "show";
    if (progress.headline) text += " [" + std::visit(*this, *progress.headline) + "]";
    for (const auto& note : progress.notes) text += " [" + std::visit(*this, note) + "]";
    return text;
  }
};

std::vector<std::string> describe(const std::vector<Command>& commands) {
  std::vector<std::string> lines;
  for (const auto& command : commands) lines.push_back(std::visit(Describe{}, command));
  return lines;
}

using Lines = std::vector<std::string>;

template <typename Type>
const Type& only(const std::vector<Command>& commands) {
  const Type* found = nullptr;
  for (const auto& command : commands)
    if (const auto* typed = std::get_if<Type>(&command)) {
      EXPECT_EQ(found, nullptr) << "more than one command of this type";
      found = typed;
    }
  if (!found) throw std::runtime_error("no command of this type");
  return *found;
}

}  // namespace

TEST(SweepState, EachHelloGetsTheGroupItsFirstJob) {
  const auto sweep = ladder(4);
  SweepState state(sweep, 2, 0, 100.0);
  EXPECT_FALSE(state.finished());
  const auto first = state.receive(cpu_group(0, {0}), 100.0);
  EXPECT_EQ(describe(first),
            (Lines{"record worker 0 ranks 0", "record job 1: trial 0 rung 0 budget 1 on worker 0 (new trial)",
                   "send worker 0 job 1: trial 0 rung 0"}));
  // Unmeasured CPU groups count 1 budget unit per second; nobody faster to wait for.
  const JobStart& job = only<RecordJobStart>(first).job;
  EXPECT_DOUBLE_EQ(job.started, 100.0);
  EXPECT_DOUBLE_EQ(job.estimate_seconds, 1.0);
  EXPECT_DOUBLE_EQ(job.faster_group_seconds, -1);
  EXPECT_EQ(job.device, "cpu");
  EXPECT_FALSE(state.finished());  // group 1 has not said hello
  EXPECT_EQ(
      describe(state.receive(cpu_group(1, {1, 2}), 100.5)),
      (Lines{"record worker 1 ranks 1,2", "record job 2: trial 1 rung 0 budget 1 on worker 1 (new trial)",
             "send worker 1 job 2: trial 1 rung 0"}));
  EXPECT_EQ(state.leader_rank(1), 1);
  EXPECT_EQ(state.busy_groups(), 2);
}

TEST(SweepState, JobsAreNumberedOnFromTheDatabase) {
  const auto sweep = ladder(4);
  SweepState state(sweep, 1, 41, 0.0);
  EXPECT_EQ(only<SendJob>(state.receive(cpu_group(0, {0}), 0.0)).job_id, 42);
}

TEST(SweepState, AResultIsRecordedAndTheTopThirdOfARungIsPromoted) {
  const auto sweep = ladder(4);
  SweepState state(sweep, 1, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);
  const auto first = state.receive(result(0, 1, 0.5), 10.0);
  EXPECT_EQ(describe(first),
            (Lines{"record job 1 done: trial 0 rung 0 metric 0.5",
                   "record job 2: trial 1 rung 0 budget 1 on worker 0 (new trial)",
                   "send worker 0 job 2: trial 1 rung 0", "show [done trial 0 rung 0 on 0]"}));
  const JobFinish& done = only<RecordJobDone>(first).job;
  EXPECT_DOUBLE_EQ(done.finished, 10.0);
  EXPECT_DOUBLE_EQ(done.budget, 1.0);
  EXPECT_EQ(done.end_step, 15);
  EXPECT_DOUBLE_EQ(done.worker_speed, 0.1);  // 1 budget unit in 10 s
  // The next job's estimate rests on that speed.
  EXPECT_DOUBLE_EQ(only<RecordJobStart>(first).job.estimate_seconds, 10.0);
  const auto& line = std::get<ShowJobDone>(*only<ShowProgress>(first).headline);
  EXPECT_DOUBLE_EQ(line.elapsed, 10.0);
  EXPECT_DOUBLE_EQ(line.seconds, 10.0);

  EXPECT_EQ(describe(state.receive(result(0, 2, 0.7), 20.0)),
            (Lines{"record job 2 done: trial 1 rung 0 metric 0.7",
                   "record job 3: trial 2 rung 0 budget 1 on worker 0 (new trial)",
                   "send worker 0 job 3: trial 2 rung 0", "show [done trial 1 rung 0 on 0]"}));
  // Three results on rung 0: the best of them (trial 1) goes on to rung 1, to 3 budget units.
  const auto promotion = state.receive(result(0, 3, 0.6), 30.0);
  EXPECT_EQ(describe(promotion),
            (Lines{"record job 3 done: trial 2 rung 0 metric 0.6",
                   "record job 4: trial 1 rung 1 budget 3 on worker 0", "send worker 0 job 4: trial 1 rung 1",
                   "show [done trial 2 rung 0 on 0]"}));
  // The promoted job trains the rest of the rung: 2 units at 0.1 units/s.
  EXPECT_DOUBLE_EQ(only<RecordJobStart>(promotion).job.estimate_seconds, 20.0);
  ASSERT_EQ(state.standings().size(), 3u);
  EXPECT_EQ(state.standings().front().trial, 1);
  EXPECT_EQ(state.results(), 3);
  SweepState fresh(sweep, 1, 0, 0.0);
  EXPECT_THROW(fresh.receive(result(0, 1, 0.5), 1.0), phalanx::Error);  // a job nobody was given
}

TEST(SweepState, AFailedTrialIsRecordedAndItsGroupGoesOn) {
  const auto sweep = ladder(4);
  SweepState state(sweep, 1, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);
  const auto commands = state.receive(JobFailed{0, 1, "batch size 0"}, 3.0);
  EXPECT_EQ(describe(commands),
            (Lines{"record job 1 failed: trial 0: batch size 0", "show trial 0 failed on worker 0",
                   "record job 2: trial 1 rung 0 budget 1 on worker 0 (new trial)",
                   "send worker 0 job 2: trial 1 rung 0"}));
  EXPECT_DOUBLE_EQ(only<RecordJobFailed>(commands).finished, 3.0);
  EXPECT_EQ(state.results(), 0);
  EXPECT_TRUE(state.standings().empty());
}

TEST(SweepState, TheStandingsLeaveOutTrialsThatFailedAsBestAndTheReportDo) {
  // Trial 1 led rung 0 and then failed at rung 1 (its checkpoints may be what failed): ASHA keeps
  // its rung-0 result, the leaderboard does not show it, after a --resume as before one.
  const auto sweep = ladder(9);
  SweepState state(sweep, 1, 7, 0.0);
  RecordedProgress progress;
  progress.trials = {0, 1, 2};
  progress.promotions = {{1, 1}};
  progress.rung_results = {{0, 0, 0.5}, {1, 0, 0.7}, {2, 0, 0.6}};
  progress.failed_trials = {1};
  state.restore(progress);
  const auto standings = state.standings();
  ASSERT_EQ(standings.size(), 2u);
  EXPECT_EQ(standings[0].trial, 2);
  EXPECT_EQ(standings[1].trial, 0);
  // And as it happens: trial 3 fails on its first job; nothing of it is listed.
  EXPECT_EQ(describe(state.receive(cpu_group(0, {0}), 0.0)),
            (Lines{"record worker 0 ranks 0", "record job 8: trial 3 rung 0 budget 1 on worker 0 (new trial)",
                   "send worker 0 job 8: trial 3 rung 0"}));
  state.receive(result(0, 8, 0.9), 1.0);  // trial 3 leads rung 0, then fails at its promotion
  EXPECT_EQ(state.standings().front().trial, 3);
  state.receive(JobFailed{0, 9, "out of memory"}, 2.0);
  for (const auto& standing : state.standings()) EXPECT_NE(standing.trial, 3);
}

TEST(SweepState, AStopSignalHandsOutNothingAndEndsWhenTheBusyGroupsHaveReported) {
  const auto sweep = ladder(9);
  SweepState state(sweep, 2, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);
  state.receive(cpu_group(1, {1}), 0.0);
  EXPECT_EQ(describe(state.stop(SIGUSR1, 5.0)),
            (Lines{"show stop by signal " + std::to_string(SIGUSR1) + ", 2 running"}));
  EXPECT_TRUE(state.stopping());
  EXPECT_TRUE(state.stop(SIGTERM, 5.5).empty());  // once
  // Group 0 stopped its trial after a step; group 1 was at its last step and finished it.
  EXPECT_EQ(describe(state.receive(JobInterrupted{0, 1, SIGUSR1, JobSteps{0, 7, 7, ""}}, 6.0)),
            (Lines{"record job 1 interrupted: trial 0 at step 7", "show [interrupted trial 0 on 0]"}));
  EXPECT_FALSE(state.finished());
  EXPECT_EQ(describe(state.receive(result(1, 2, 0.5), 7.0)),
            (Lines{"record job 2 done: trial 1 rung 0 metric 0.5", "show [done trial 1 rung 0 on 1]"}));
  EXPECT_TRUE(state.finished());
  EXPECT_EQ(state.interrupted(), 1);
  EXPECT_EQ(state.stop_signal(), SIGUSR1);
}

// A signal seen only by a worker's ranks stops its trial and then the whole sweep.
TEST(SweepState, AnInterruptionReportedByAWorkerStopsTheSweep) {
  const auto sweep = ladder(9);
  SweepState state(sweep, 2, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);
  state.receive(cpu_group(1, {1}), 0.0);
  const auto commands = state.receive(JobInterrupted{1, 2, SIGTERM, JobSteps{0, 4, 4, ""}}, 2.0);
  EXPECT_EQ(describe(commands), (Lines{"record job 2 interrupted: trial 1 at step 4",
                                       "show stop by signal " + std::to_string(SIGTERM) + ", 1 running",
                                       "show [interrupted trial 1 on 1]"}));
  EXPECT_TRUE(state.stopping());
  EXPECT_EQ(state.stop_signal(), SIGTERM);
  EXPECT_FALSE(state.finished());
}

TEST(SweepState, ResumeRequeuesTheInterruptedJobsBeforeAnythingNew) {
  const auto sweep = ladder(9);
  SweepState state(sweep, 2, 7, 0.0);
  RecordedProgress progress;
  progress.trials = {0, 1, 2, 3};
  progress.promotions = {{1, 1}};
  progress.rung_results = {{0, 0, 0.5}, {1, 0, 0.7}, {2, 0, 0.6}};
  progress.interrupted = {{1, 1}, {3, 0}, {3, 0}};
  state.restore(progress);
  EXPECT_EQ(state.requeued_jobs(), 2u);
  EXPECT_EQ(state.asha().started_trials(), 4);
  EXPECT_EQ(describe(state.receive(cpu_group(0, {0}), 0.0)),
            (Lines{"record worker 0 ranks 0", "record job 8: trial 1 rung 1 budget 3 on worker 0",
                   "send worker 0 job 8: trial 1 rung 1"}));
  EXPECT_EQ(describe(state.receive(cpu_group(1, {1}), 0.0)),
            (Lines{"record worker 1 ranks 1", "record job 9: trial 3 rung 0 budget 1 on worker 1",
                   "send worker 1 job 9: trial 3 rung 0"}));
  EXPECT_EQ(state.requeued_jobs(), 0u);
  // Trial 1's promotion was recorded: it is not offered again; a new trial comes next.
  EXPECT_EQ(describe(state.receive(result(1, 9, 0.4), 5.0)),
            (Lines{"record job 9 done: trial 3 rung 0 metric 0.4",
                   "record job 10: trial 4 rung 0 budget 1 on worker 1 (new trial)",
                   "send worker 1 job 10: trial 4 rung 0", "show [done trial 3 rung 0 on 1]"}));
}

// docs/SWEEPS.md, "Jobs that join a running sweep": a joined job's groups say hello and take jobs
// like this mpirun's; when its connection closes (the job was killed), the job its group held is
// recorded as lost and requeued, the next free group continues it, and the sweep does not wait for
// the groups that left.
TEST(SweepState, AKilledJoinedJobsTrialIsRequeuedAndContinuedByAnotherGroup) {
  const auto sweep = ladder(3);
  SweepState state(sweep, 1, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);  // job 1: trial 0
  EXPECT_EQ(describe(state.join(7, 1, 1.0)), (Lines{"show [joined job 7: 1 join]"}));
  EXPECT_EQ(state.group_count(), 2);
  EXPECT_EQ(state.group(1).joined_job, 7);
  EXPECT_FALSE(state.finished());  // the joined group has not said hello
  EXPECT_EQ(describe(state.receive(cpu_group(1, {0}), 1.5)),
            (Lines{"record worker 1 ranks 0", "record job 2: trial 1 rung 0 budget 1 on worker 1 (new trial)",
                   "send worker 1 job 2: trial 1 rung 0"}));
  // Killed while training trial 1; group 0 is busy, so nothing is handed out yet.
  const auto dropped = state.drop(7, 3.0);
  EXPECT_EQ(describe(dropped), (Lines{"record job 2 lost: trial 1", "show [joined job 7: 1 left, requeued 1]"}));
  EXPECT_DOUBLE_EQ(only<RecordJobLost>(dropped).finished, 3.0);
  EXPECT_TRUE(state.group(1).left);
  EXPECT_EQ(state.requeued_jobs(), 1u);
  EXPECT_TRUE(state.drop(7, 3.5).empty());  // nothing left to lose
  // Group 0 takes the requeued job first (from the trial's newest checkpoint), then trial 2.
  EXPECT_EQ(describe(state.receive(result(0, 1, 0.5), 4.0)),
            (Lines{"record job 1 done: trial 0 rung 0 metric 0.5", "record job 3: trial 1 rung 0 budget 1 on worker 0",
                   "send worker 0 job 3: trial 1 rung 0", "show [done trial 0 rung 0 on 0]"}));
  EXPECT_EQ(state.requeued_jobs(), 0u);
  state.receive(result(0, 3, 0.7), 5.0);  // job 4: trial 2
  state.receive(result(0, 4, 0.6), 6.0);  // job 5: trial 1's promotion
  EXPECT_FALSE(state.finished());
  state.receive(result(0, 5, 0.8, 15, 45), 9.0);  // one result on rung 1 promotes nobody: the end
  EXPECT_TRUE(state.finished());                  // the group that left is not waited for
  EXPECT_EQ(state.group(1).busy_seconds, 1.5);
}

// A stop signal that reaches a joined job (its own preemption) is not the sweep's: the joined
// job's interrupted trial is requeued, its groups leave (idle ones at once, busy ones with their
// report), and the sweep goes on.
TEST(SweepState, AStopSignalInAJoinedJobRequeuesItsTrialAndOnlyItsGroupsLeave) {
  const auto sweep = ladder(9);
  SweepState state(sweep, 1, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);  // job 1: trial 0
  state.join(3, 2, 0.0);
  state.receive(cpu_group(1, {0}), 0.0);  // job 2: trial 1
  state.receive(cpu_group(2, {1}), 0.0);  // job 3: trial 2
  EXPECT_TRUE(state.leave(3, 1.0).empty());  // both busy: they leave with their reports
  EXPECT_TRUE(state.group(1).leaving);
  const auto stopped = state.receive(JobInterrupted{1, 2, SIGTERM, JobSteps{0, 4, 15, ""}}, 2.0);
  EXPECT_EQ(describe(stopped), (Lines{"record job 2 interrupted: trial 1 at step 4", "send worker 1 stop",
                                      "show [interrupted trial 1 on 1] [joined job 3: 1 left, requeued 1]"}));
  EXPECT_FALSE(state.stopping());
  EXPECT_EQ(state.requeued_jobs(), 1u);
  // Group 2 finished its rung as the signal came: the result counts, and it leaves too.
  EXPECT_EQ(describe(state.receive(result(2, 3, 0.6), 2.5)),
            (Lines{"record job 3 done: trial 2 rung 0 metric 0.6", "send worker 2 stop",
                   "show [done trial 2 rung 0 on 2] [joined job 3: 2 left]"}));
  // This mpirun's group takes the requeued trial next.
  EXPECT_EQ(only<SendJob>(state.receive(result(0, 1, 0.5), 3.0)).trial, 1);
  EXPECT_EQ(state.interrupted(), 0);  // no job of the sweep's own was stopped
}

// The sweep's own stop signal does not reach a joined job's ranks: its busy groups are asked to
// stop after a step with a checkpoint, as a handover, and report their jobs interrupted.
TEST(SweepState, TheSweepsStopAsksJoinedGroupsToStopAfterTheirNextStep) {
  const auto sweep = ladder(9);
  SweepState state(sweep, 1, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);
  state.join(1, 1, 0.0);
  state.receive(cpu_group(1, {0}), 0.0);
  EXPECT_EQ(describe(state.stop(SIGUSR1, 1.0)),
            (Lines{"send worker 1 handover of job 2", "show stop by signal " + std::to_string(SIGUSR1) + ", 2 running"}));
  EXPECT_EQ(describe(state.receive(JobHandedOver{1, 2, JobSteps{0, 3, 15, ""}}, 2.0)),
            (Lines{"record job 2 interrupted: trial 1 at step 3", "show [interrupted trial 1 on 1]"}));
  EXPECT_FALSE(state.finished());
  state.receive(JobInterrupted{0, 1, SIGUSR1, JobSteps{0, 5, 15, ""}}, 2.5);
  EXPECT_TRUE(state.finished());
  EXPECT_EQ(state.interrupted(), 2);
}

// Groups of different jobs share no MPI: a joined job's idle group joins no running trial, and
// this mpirun's idle group does not join a joined group's trial.
TEST(SweepState, GroupsOfDifferentJobsNeverMerge) {
  const auto sweep = ladder(1, 30, true);
  SweepState state(sweep, 2, 0, 0.0);
  state.join(4, 1, 0.0);
  state.receive(cpu_group(2, {0}), 0.0);  // the joined group says hello first: job 1, trial 0
  EXPECT_EQ(describe(state.receive(cpu_group(0, {0}), 0.0)), (Lines{"record worker 0 ranks 0"}));
  EXPECT_EQ(state.group(0).joining, -1);
  EXPECT_EQ(describe(state.receive(cpu_group(1, {1}), 0.0)), (Lines{"record worker 1 ranks 1"}));
  state.receive(result(2, 1, 0.5), 30.0);
  EXPECT_TRUE(state.finished());
}

// docs/SWEEPS.md, "Heterogeneous dispatch": a slow free group leaves a promotion to a busy faster
// group that will finish it sooner, takes rung-0 work instead, and the fast group takes the
// promotion when it asks next.
TEST(SweepState, ASlowGroupLeavesAPromotionToAFasterBusyGroup) {
  const auto sweep = ladder(9);
  SweepState state(sweep, 2, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);  // job 1: trial 0
  state.receive(cpu_group(1, {1}), 0.0);  // job 2: trial 1
  state.receive(result(0, 1, 0.5), 1.0);  // group 0: 1 unit/s; job 3: trial 2
  state.receive(result(0, 3, 0.6), 2.0);  // job 4: trial 3, due to end at 3 s
  // Group 1 took 2.5 s (0.4 units/s): trial 1's promotion (2 units) would take it 5 s, group 0
  // 0.5 + 2 s. It starts trial 4 instead.
  const auto slow = state.receive(result(1, 2, 0.7), 2.5);
  EXPECT_EQ(describe(slow),
            (Lines{"record job 2 done: trial 1 rung 0 metric 0.7",
                   "record job 5: trial 4 rung 0 budget 1 on worker 1 (new trial)",
                   "send worker 1 job 5: trial 4 rung 0", "show [done trial 1 rung 0 on 1]"}));
  EXPECT_DOUBLE_EQ(only<RecordJobStart>(slow).job.estimate_seconds, 2.5);
  EXPECT_EQ(state.passed_over(), 1);
  const auto fast = state.receive(result(0, 4, 0.4), 3.0);
  EXPECT_EQ(describe(fast),
            (Lines{"record job 4 done: trial 3 rung 0 metric 0.4",
                   "record job 6: trial 1 rung 1 budget 3 on worker 0", "send worker 0 job 6: trial 1 rung 1",
                   "show [done trial 3 rung 0 on 0]"}));
  EXPECT_DOUBLE_EQ(only<RecordJobStart>(fast).job.estimate_seconds, 2.0);
  EXPECT_DOUBLE_EQ(only<RecordJobStart>(fast).job.faster_group_seconds, -1);  // nobody faster
}

TEST(SweepState, WithoutJoinsAGroupWithNothingToDoWaits) {
  const auto sweep = ladder(1, 30);
  SweepState state(sweep, 2, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);
  EXPECT_EQ(describe(state.receive(cpu_group(1, {1}), 0.0)), (Lines{"record worker 1 ranks 1"}));
  EXPECT_FALSE(state.finished());
  state.receive(result(0, 1, 0.5), 30.0);
  EXPECT_TRUE(state.finished());  // one trial, one result: nothing to promote
}

// docs/SWEEPS.md, "No idle tail": a group ASHA has nothing for joins the running trial of its
// kind; the trial stops after a step and continues on the merged groups, one job reported by the
// trial's group, with every group busy until it ends.
TEST(SweepState, IdleGroupsJoinTheRunningTrialWhichContinuesOnTheMergedGroups) {
  const auto sweep = ladder(1, 30, true);
  SweepState state(sweep, 3, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);  // job 1: trial 0, rung 0 (30 units)
  const auto join = state.receive(cpu_group(1, {1, 2}), 0.0);
  EXPECT_EQ(describe(join), (Lines{"record worker 1 ranks 1,2", "send worker 0 handover of job 1",
                                   "show [worker 1 joins trial 0 on 0]"}));
  // 30 s left at 1 unit/s (unmeasured CPU groups) on group 0's one rank.
  const auto& first = std::get<ShowJoin>(only<ShowProgress>(join).notes.at(0));
  EXPECT_DOUBLE_EQ(first.seconds_left, 30.0);
  EXPECT_EQ(first.ranks, 1);
  EXPECT_EQ(first.worker_ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(state.group(1).joining, 0);
  // The next idle group counts group 1 as joined already: 15 s left on 3 ranks. The handover has
  // been asked for once.
  const auto second = state.receive(cpu_group(2, {3}), 0.0);
  EXPECT_EQ(describe(second), (Lines{"record worker 2 ranks 3", "show [worker 2 joins trial 0 on 0]"}));
  const auto& line = std::get<ShowJoin>(only<ShowProgress>(second).notes.at(0));
  EXPECT_DOUBLE_EQ(line.seconds_left, 15.0);
  EXPECT_EQ(line.ranks, 3);

  // Handed over after step 5 of 30 (5 units in 5 s: group 0 measures 1 unit/s).
  const auto handover = state.receive(JobHandedOver{0, 1, JobSteps{0, 5, 30, ""}}, 5.0);
  EXPECT_EQ(describe(handover), (Lines{"record job 1 handed over at step 5: job 2 on workers 0+1+2",
                                       "send worker 0 job 2: trial 0 rung 0 on ranks 0,1,2,3",
                                       "send worker 1 job 2: trial 0 rung 0 on ranks 0,1,2,3",
                                       "send worker 2 job 2: trial 0 rung 0 on ranks 0,1,2,3",
                                       "show [handed over trial 0 to 0+1+2]"}));
  const RecordHandover& record = only<RecordHandover>(handover);
  EXPECT_EQ(record.groups, (std::vector<JobGroup>{{0, {0}}, {1, {1, 2}}, {2, {3}}}));
  EXPECT_EQ(record.steps, (JobSteps{0, 5, 30, ""}));
  EXPECT_EQ(record.next.job_id, 2);
  EXPECT_EQ(record.next.worker, 0);
  EXPECT_DOUBLE_EQ(record.next.budget, 30);
  EXPECT_DOUBLE_EQ(record.next.started, 5.0);
  // The rest (25 units) at the groups' speeds added up (1 + 1 + 1), no merged job measured yet.
  EXPECT_NEAR(record.next.estimate_seconds, 25.0 / 3.0, 1e-9);
  EXPECT_DOUBLE_EQ(record.next.faster_group_seconds, -1);
  EXPECT_FALSE(std::get<ShowJobHandedOver>(*only<ShowProgress>(handover).headline).merged_efficiency);
  EXPECT_EQ(state.busy_groups(), 3);

  // The merged job ends: every group free, the result on the reporting group with all named.
  const auto done = state.receive(result(0, 2, 0.8, 5, 30), 20.0);
  EXPECT_EQ(describe(done),
            (Lines{"record job 2 done: trial 0 rung 0 metric 0.8", "show [done trial 0 rung 0 on 0+1+2]"}));
  EXPECT_TRUE(state.finished());
  EXPECT_DOUBLE_EQ(state.group(0).busy_seconds, 20.0);
  EXPECT_DOUBLE_EQ(state.group(1).busy_seconds, 15.0);
  EXPECT_DOUBLE_EQ(state.busy_seconds(), 50.0);
  EXPECT_THROW(state.receive(result(1, 2, 0.8), 21.0), phalanx::Error);  // only the reporting group
}

// docs/SWEEPS.md, "Races": the trial finishes before its handover; the waiting group is free again.
TEST(SweepState, ATrialThatEndsBeforeItsHandoverFreesTheGroupsWaitingForIt) {
  const auto sweep = ladder(2, 30, true);
  SweepState state(sweep, 2, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);            // job 1: trial 0
  state.receive(cpu_group(1, {1}), 0.0);            // job 2: trial 1
  state.receive(JobFailed{1, 2, "diverged"}, 2.0);  // group 1: nothing from ASHA, joins trial 0
  EXPECT_EQ(state.group(1).joining, 0);
  const auto commands = state.receive(result(0, 1, 0.6), 3.0);
  EXPECT_EQ(describe(commands),
            (Lines{"record job 1 done: trial 0 rung 0 metric 0.6",
                   "show [done trial 0 rung 0 on 0] [trial 0 ended before its handover: 1 free]"}));
  EXPECT_TRUE(state.finished());
  EXPECT_EQ(state.group(1).joining, -1);
}

// A stop signal wins over a handover: the job is interrupted and --resume requeues it.
TEST(SweepState, AHandoverDuringAStopIsAnInterruption) {
  const auto sweep = ladder(1, 30, true);
  SweepState state(sweep, 2, 0, 0.0);
  state.receive(cpu_group(0, {0}), 0.0);
  state.receive(cpu_group(1, {1}), 0.0);  // joins trial 0
  state.stop(SIGUSR1, 1.0);
  EXPECT_EQ(describe(state.receive(JobHandedOver{0, 1, JobSteps{0, 2, 30, ""}}, 2.0)),
            (Lines{"record job 1 interrupted: trial 0 at step 2",
                   "show [interrupted trial 0 on 0] [trial 0 ended before its handover: 1 free]"}));
  EXPECT_TRUE(state.finished());
}

TEST(SweepState, TpeProposesEachNewTrialFromTheResultsRecordedBeforeIt) {
  // One parameter: after one random startup trial, TPE needs 2 results of a rung. Every trial
  // trained fully (no promotions), so each result is followed by a new trial.
  auto sweep = ladder(6);
  sweep.scheduler = phalanx::config::Scheduler::Full;
  sweep.search = phalanx::config::Search::Tpe;
  sweep.tpe_startup_trials = 1;
  sweep.space = {phalanx::config::SearchParameter{"x", phalanx::config::ParameterType::Uniform, {}, 0, 1}};
  SweepState state(sweep, 2, 0, 0.0);
  const auto first = only<RecordJobStart>(state.receive(cpu_group(0, {0}), 0.0)).proposal.value();
  EXPECT_EQ(first.method, ProposalMethod::Random);
  // No result yet: trial 1 is random too, though past the startup trials.
  const auto second = only<RecordJobStart>(state.receive(cpu_group(1, {1}), 0.0)).proposal.value();
  EXPECT_EQ(second.method, ProposalMethod::Random);
  EXPECT_EQ(second.parameters, sample_trial(sweep, 1));
  state.receive(result(0, 1, 0.3), 10.0);  // trial 2 starts, random: one result only
  const auto fitted = state.receive(result(1, 2, 0.8), 11.0);
  const Proposal& proposal = only<RecordJobStart>(fitted).proposal.value();
  EXPECT_EQ(only<RecordJobStart>(fitted).job.trial, 3);
  EXPECT_EQ(proposal.method, ProposalMethod::Tpe);
  EXPECT_EQ(proposal.model_rung, 0);
  EXPECT_EQ(proposal.fitted_on, (std::vector<int>{0, 1}));
  EXPECT_EQ(state.parameters(3), proposal.parameters);
  // What the trial is sent is what was recorded.
  EXPECT_EQ(only<SendJob>(fitted).trial, 3);

  // --resume: the recorded parameters come back, and the next proposal is the one the first
  // state makes from the same results.
  RecordedProgress progress;
  progress.trials = {0, 1, 2, 3};
  progress.rung_results = {{0, 0, 0.3}, {1, 0, 0.8}};
  progress.interrupted = {{2, 0}, {3, 0}};
  for (int trial = 0; trial < 4; ++trial) progress.parameters[trial] = state.parameters(trial).values;
  SweepState resumed(sweep, 2, 4, 20.0);
  resumed.restore(progress);
  for (int trial = 0; trial < 4; ++trial) EXPECT_EQ(resumed.parameters(trial), state.parameters(trial)) << trial;
  resumed.receive(cpu_group(0, {0}), 20.0);
  resumed.receive(cpu_group(1, {1}), 20.0);  // both groups redo the interrupted trials 2 and 3
  const auto after_resume = resumed.receive(result(0, 5, 0.5), 30.0);
  const auto uninterrupted = state.receive(result(0, 3, 0.5), 30.0);
  EXPECT_EQ(only<RecordJobStart>(after_resume).proposal, only<RecordJobStart>(uninterrupted).proposal);
  EXPECT_EQ(only<RecordJobStart>(after_resume).job.trial, 4);
}

// scheduler: pbt on one group: the population starts first, then each trial continues interval by
// interval; the trial in the bottom quarter of four results copies the top trial's checkpoint
// (its step says so before its next job goes out) and trains on with the donor's seed.
phalanx::config::SweepConfig pbt_population() {
  phalanx::config::SweepConfig sweep;
  sweep.seed = 5;
  sweep.trials = 4;
  sweep.scheduler = phalanx::config::Scheduler::Pbt;
  sweep.max_budget = 2;
  sweep.pbt.population = 4;
  sweep.pbt.interval = 1;
  sweep.join_running = false;
  sweep.space = {phalanx::config::SearchParameter{
      "optimizer.learning_rate", phalanx::config::ParameterType::LogUniform, {}, 1e-3, 1.0}};
  return sweep;
}

TEST(SweepState, PbtRunsThePopulationIntervalByIntervalAndTheBottomCopiesTheTop) {
  const auto sweep = pbt_population();
  SweepState state(sweep, 1, 0, 0.0);
  ASSERT_NE(state.pbt(), nullptr);
  EXPECT_EQ(state.asha().rung_count(), 2);
  EXPECT_EQ(describe(state.receive(cpu_group(0, {0}), 0.0)),
            (Lines{"record worker 0 ranks 0", "record job 1: trial 0 rung 0 budget 1 on worker 0 (new trial)",
                   "send worker 0 job 1: trial 0 rung 0"}));
  EXPECT_EQ(describe(state.receive(result(0, 1, 0.9), 10.0)),
            (Lines{"record job 1 done: trial 0 rung 0 metric 0.9", "pbt trial 0 interval 0 metric 0.9:",
                   "record job 2: trial 1 rung 0 budget 1 on worker 0 (new trial)",
                   "send worker 0 job 2: trial 1 rung 0", "show [done trial 0 rung 0 on 0]"}));
  state.receive(result(0, 2, 0.5), 20.0);
  state.receive(result(0, 3, 0.6), 30.0);
  // The fourth result decides all four: trial 3 is the bottom quarter and copies the top one,
  // trial 0; then the population continues at interval 1 in trial order.
  EXPECT_EQ(
      describe(state.receive(result(0, 4, 0.1), 40.0)),
      (Lines{"record job 4 done: trial 3 rung 0 metric 0.1",
             "pbt trial 3 interval 0 metric 0.1: trial 0 continues trial 1 continues trial 2 continues trial "
             "3 copies 0/0",
             "record job 5: trial 0 rung 1 budget 2 on worker 0", "send worker 0 job 5: trial 0 rung 1",
             "show [done trial 3 rung 0 on 0]"}));
  const auto donor_seed = "seed=" + std::to_string(trial_seed(sweep, 0));
  EXPECT_EQ(state.assignments(3, 1).back(), donor_seed);
  EXPECT_NE(state.assignments(3, 0).back(), donor_seed);
  EXPECT_EQ(state.assignments(1, 1), state.assignments(1, 0));  // trial 1 continues unchanged
  // Interval 1 is the last: each result ends its trial, and the sweep ends.
  std::int64_t job = 5;
  for (int trial = 0; trial < 4; ++trial) {
    const auto commands = state.receive(result(0, job, 0.2 + 0.1 * trial), 50.0 + 10 * trial);
    const auto& step = only<RecordPbtStep>(commands);
    ASSERT_TRUE(step.finished.has_value());
    EXPECT_EQ(step.finished->trial, trial);
    EXPECT_EQ(step.finished->interval, 1);
    EXPECT_EQ(step.finished->parent_trial, trial == 3 ? 0 : -1);  // the lineage of its interval
    EXPECT_TRUE(step.next.empty());
    EXPECT_TRUE(only<RecordJobDone>(commands).job.completed);
    ++job;
  }
  EXPECT_TRUE(state.finished());
  EXPECT_EQ(state.standings().size(), 4u);
  EXPECT_EQ(state.standings().front().trial, 3);
}

TEST(SweepState, PbtResumeRequeuesTheInterruptedIntervalAndRedecidesAnUndecidedStep) {
  const auto sweep = pbt_population();
  SweepState state(sweep, 1, 10, 0.0);
  RecordedProgress progress;
  progress.trials = {0, 1, 2, 3};
  progress.rung_results = {{0, 0, 0.9}, {1, 0, 0.5}, {2, 0, 0.6}, {3, 0, 0.1}};
  progress.promotions = {{0, 1}};
  progress.interrupted = {{0, 1}};
  state.restore(progress);
  // Trials 0-2 had their steps recorded; trial 3's result was committed, its lineage row and its
  // step not: the row is written again with the result's metric, and the step decided again.
  std::vector<PbtStep> lineage;
  const std::vector<double> metrics{0.9, 0.5, 0.6};
  for (int trial = 0; trial < 3; ++trial) {
    lineage.push_back(PbtStep{trial, 0, -1, -1, sample_trial(sweep, trial), metrics[trial]});
    lineage.push_back(PbtStep{trial, 1, -1, -1, sample_trial(sweep, trial), std::nullopt});
  }
  EXPECT_EQ(describe(state.restore_pbt(progress, lineage)),
            (Lines{"pbt trial 3 interval 0 metric 0.1:", "pbt: trial 3 copies 0/0"}));
  EXPECT_EQ(describe(state.receive(cpu_group(0, {0}), 1.0)),
            (Lines{"record worker 0 ranks 0", "record job 11: trial 0 rung 1 budget 2 on worker 0",
                   "send worker 0 job 11: trial 0 rung 1"}));
  EXPECT_EQ(only<SendJob>(state.receive(result(0, 11, 0.8), 2.0)).trial, 1);
}

TEST(SweepState, PbtResumeWritesAgainALineageMetricAKillLeftOut) {
  // A kill after trial 2's result was committed and before its lineage row took the metric (the
  // row was written by the decision before): the resume writes the metric from the result. Rows
  // that hold theirs are not written again.
  const auto sweep = pbt_population();
  SweepState state(sweep, 1, 10, 0.0);
  RecordedProgress progress;
  progress.trials = {0, 1, 2, 3};
  progress.rung_results = {{0, 0, 0.9}, {1, 0, 0.5}, {2, 0, 0.6}};
  progress.promotions = {{3, 0}};
  progress.interrupted = {{3, 0}};
  state.restore(progress);
  std::vector<PbtStep> lineage{PbtStep{0, 0, -1, -1, sample_trial(sweep, 0), 0.9},
                               PbtStep{1, 0, -1, -1, sample_trial(sweep, 1), 0.5},
                               PbtStep{2, 0, -1, -1, sample_trial(sweep, 2), std::nullopt}};
  const auto commands = state.restore_pbt(progress, lineage);
  EXPECT_EQ(describe(commands), (Lines{"pbt trial 2 interval 0 metric 0.6:"}));
  const auto& written = only<RecordPbtStep>(commands);
  ASSERT_TRUE(written.finished.has_value());
  EXPECT_EQ(written.finished->parameters.assignments(), sample_trial(sweep, 2).assignments());
}
