// The sweep coordinator's decisions, apart from MPI, the database, the terminal and the clock: the
// worker groups, ASHA, each new trial's parameters (trial_proposals.hpp: TPE fits the results
// recorded up to the message that frees a group), the jobs requeued after a kill or a stop, and
// the speed estimates. A
// group leader's message (decoded, messages.hpp) goes in with the time it arrived; the commands
// that follow from it come out (sweep_commands.hpp): what to commit, whom to send which job or
// handover, what to show. The coordinator loop (coordinator.cpp) executes them; tests drive it
// with hand-made messages and times. Which job a free group takes is dispatch.hpp's rule, which
// running trial an idle group joins its choose_join, the order of work ASHA's.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <vector>

#include "messages.hpp"
#include "phalanx/config/sweep_config.hpp"
#include "phalanx/sweep/asha.hpp"
#include "phalanx/sweep/dispatch.hpp"
#include "phalanx/sweep/job_records.hpp"
#include "phalanx/sweep/pbt.hpp"
#include "phalanx/sweep/trial_proposals.hpp"
#include "sweep_commands.hpp"
#include "worker_group.hpp"

namespace phalanx::sweep {

// A trial's place on the leaderboard: its highest recorded rung and its metric there.
struct Standing {
  int trial = 0;
  int rung = 0;
  double metric = 0;
};

class SweepState {
 public:
  // `groups` worker groups will say hello; jobs are numbered on from `last_job_id` (the database's
  // highest); `start` is when this run of the sweep began (seconds since the Unix epoch).
  SweepState(const config::SweepConfig& sweep, int groups, std::int64_t last_job_id, double start);

  // --resume: ASHA's rungs and promotions and the trials' parameters as recorded, and the
  // interrupted jobs to requeue before anything else.
  void restore(const RecordedProgress& progress);
  // --resume of scheduler: pbt, after restore(): the population from the same progress and the
  // recorded lineage; returns the steps a kill left undecided, to carry out before anything else.
  std::vector<Command> restore_pbt(const RecordedProgress& progress, const std::vector<PbtStep>& lineage);

  // A group leader's message at `now`: what it changes (commits first), then, unless the sweep is
  // stopping, the jobs handed to the free groups (or the running trials they go to join), then
  // what to show.
  std::vector<Command> receive(const WorkerMessage& message, double now);
  // A stop signal (`signal`): no job is handed out any more; the sweep ends when the busy groups
  // have reported (their jobs interrupted with a checkpoint, or finished if at their last step).
  std::vector<Command> stop(int signal, double now);

  // Jobs that join the running sweep (sweep --join, docs/SWEEPS.md): `joined_job` (the
  // coordinator's number for its connection) brings `groups` worker groups, numbered on from
  // group_count(); they say hello, take jobs and report like this mpirun's groups, but never merge
  // with groups of another job (no MPI between them).
  std::vector<Command> join(int joined_job, int groups, double now);
  // The joined job is leaving (a stop signal reached it): its idle groups leave now, its busy ones
  // once they have reported (their trials stop with a checkpoint and are requeued).
  std::vector<Command> leave(int joined_job, double now);
  // The joined job is gone (its connection closed: killed, or its host died): the jobs its groups
  // held are requeued, to go on from their trials' newest checkpoints on other groups.
  std::vector<Command> drop(int joined_job, double now);

  bool stopping() const { return stopping_; }
  int stop_signal() const { return stop_signal_; }
  // Every group has said hello and none is busy (groups that left aside): with the dispatch done,
  // nothing can change any more.
  bool finished() const;

  // What the log, the end of the sweep and the tests read.
  const Asha& asha() const { return asha_; }
  const Pbt* pbt() const { return pbt_ ? &*pbt_ : nullptr; }  // with scheduler: pbt
  // The KEY=VALUE overrides a trial trains `rung` with: its sampled values, or under PBT the
  // values of that interval.
  std::vector<std::string> assignments(int trial, int rung) const;
  const config::SweepConfig& sweep() const { return sweep_; }
  // The parameters of a trial started in this run or recorded before it.
  TrialParameters parameters(int trial) const { return proposals_.parameters(trial); }
  // The values `trial` trained `rung` with: under PBT those of that interval (exploits and
  // explores change them), otherwise its proposal's.
  TrialParameters parameters(int trial, int rung) const {
    return pbt_ ? pbt_->parameters(trial, rung) : parameters(trial);
  }
  int group_count() const { return static_cast<int>(groups_.size()); }
  const WorkerGroup& group(int worker) const;
  int leader_rank(int worker) const;  // its first world rank
  int busy_groups() const;
  double busy_seconds() const;  // of every group, in this run
  std::size_t requeued_jobs() const { return requeued_.size(); }
  int results() const { return results_; }          // in this run
  int interrupted() const { return interrupted_; }  // jobs a stop signal ended in this run
  int passed_over() const { return passed_over_; }  // promotions a slower group left to a faster one
  // Trials by their highest rung, then metric: what the leaderboard and best/ rank by.
  std::vector<Standing> standings() const;

 private:
  struct Output;
  void hello(const Hello& message, Output& out);
  // Frees the groups of `worker`'s job `job_id` and those waiting to join it (`joiners`); returns
  // the job's groups.
  std::vector<int> release(int worker, std::int64_t job_id, double now, std::vector<int>& joiners);
  void hand_over(int worker, const std::vector<int>& before, const std::vector<int>& joiners,
                 const JobHandedOver& message, double now, Output& out);
  void interrupted(int worker, const JobSteps& steps, int signal, double now, Output& out);
  void failed(const JobFailed& message, double now, Output& out);
  void result(const JobResult& message, const std::vector<int>& members, double now, Output& out);
  void begin_stop(int signal, double now, Output& out);
  void requeue(const Job& job);

  void dispatch(double now, Output& out);
  void assign(int worker, const Job& job, bool new_trial, const DispatchEstimate& estimate, double now,
              Output& out);
  void join_running(int worker, double now, Output& out);

  void measure(int worker, const std::vector<int>& members, const JobSteps& steps, double seconds,
               double now);
  double cost(const Job& job) const;
  std::vector<GroupState> group_states(double now) const;
  std::vector<int> job_groups(int worker) const;
  const MergedSpeed& merged_speed(bool gpu) const { return merged_speeds_[gpu ? 1 : 0]; }
  MergedSpeed& merged_speed(bool gpu) { return merged_speeds_[gpu ? 1 : 0]; }
  WorkerGroup& group_of(int worker);

  const config::SweepConfig& sweep_;
  Asha asha_;
  TrialProposals proposals_;
  std::optional<Pbt> pbt_;  // scheduler: pbt decides the jobs; asha_ keeps the intervals' results
  std::vector<WorkerGroup> groups_;
  std::deque<Job> requeued_;
  std::int64_t last_job_id_;
  double start_;
  // How merged jobs compare with their groups' speeds, for CPU [0] and GPU [1] groups apart: MPI
  // over shared cores and NCCL over GPUs differ in what a merge costs.
  MergedSpeed merged_speeds_[2];
  std::set<int> failed_trials_;  // left out of the standings, as best/ and the report leave them out
  int results_ = 0;
  int interrupted_ = 0;
  int passed_over_ = 0;
  bool stopping_ = false;
  int stop_signal_ = 0;
};

}  // namespace phalanx::sweep
