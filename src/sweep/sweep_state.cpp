// The coordinator's decisions (see sweep_state.hpp). Order of work: jobs requeued after a kill or a
// stop first, then ASHA's candidates; which of them a free group takes is the dispatch rule, and a
// group that takes nothing joins a running trial of its kind (no idle tail, docs/SWEEPS.md).
#include "sweep_state.hpp"

#include <algorithm>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "phalanx/core/error.hpp"
#include "phalanx/sweep/search_space.hpp"

namespace phalanx::sweep {
namespace {

// The note that joined job `joined_job`'s groups joined the sweep (`left` false) or left it; the
// caller adds the workers and the trials requeued.
ShowJoinedJob joined_job_note(double elapsed, int joined_job, bool left) {
  ShowJoinedJob note;
  note.elapsed = elapsed;
  note.joined_job = joined_job;
  note.left = left;
  return note;
}

// The speeds of `members` added up, unmeasured ones filled in as effective_speed() does.
double summed_speed(const std::vector<int>& members, const std::vector<GroupState>& states) {
  double speed = 0;
  for (const int member : members) speed += effective_speed(states[static_cast<std::size_t>(member)], states);
  return speed;
}

}  // namespace

// The commands of one message, and what it shows once its jobs have been handed out.
struct SweepState::Output {
  std::vector<Command> commands;
  std::optional<std::variant<ShowJobDone, ShowJobInterrupted, ShowJobHandedOver>> headline;
  std::vector<std::variant<ShowEndedBeforeHandover, ShowJoin, ShowJoinedJob>> notes;

  std::vector<Command> finish() {
    if (headline || !notes.empty()) commands.push_back(ShowProgress{std::move(headline), std::move(notes)});
    return std::move(commands);
  }
};

SweepState::SweepState(const config::SweepConfig& sweep, int groups, std::int64_t last_job_id, double start)
    : sweep_(sweep),
      asha_(sweep.scheduler == config::Scheduler::Pbt
                ? Asha(pbt_budgets(sweep.pbt.interval, sweep.max_budget),
                       sweep.goal == config::Goal::Maximize, trial_count(sweep))
                : Asha(sweep.min_budget, sweep.max_budget, sweep.eta, sweep.goal == config::Goal::Maximize,
                       trial_count(sweep), sweep.scheduler == config::Scheduler::Full, sweep.asha_rule,
                       sweep.asha_brackets)),
      proposals_(sweep),
      groups_(static_cast<std::size_t>(groups)),
      last_job_id_(last_job_id),
      start_(start) {
  if (sweep.scheduler == config::Scheduler::Pbt) pbt_.emplace(sweep);
}

void SweepState::restore(const RecordedProgress& progress) {
  // Random and grid trials are pure functions of their ids; only TPE's depend on the past.
  if (sweep_.search == config::Search::Tpe)
    for (const auto& [trial, values] : progress.parameters) proposals_.restore(trial, values);
  for (const int trial : progress.trials) asha_.restore_started(trial);
  for (const auto& [trial, rung] : progress.promotions) asha_.restore_promoted(trial, rung);
  for (const auto& result : progress.rung_results) asha_.record(result.trial, result.rung, result.metric);
  for (const auto& [trial, rung] : progress.interrupted) requeue(Job{trial, rung});
  failed_trials_.insert(progress.failed_trials.begin(), progress.failed_trials.end());
}

std::vector<Command> SweepState::restore_pbt(const RecordedProgress& progress,
                                             const std::vector<PbtStep>& lineage) {
  std::vector<Command> commands;
  if (!pbt_) return commands;
  auto decided = pbt_->restore(progress, lineage);
  // A result and its lineage row are committed one after the other: a kill between the two leaves
  // the row without its metric (or, at interval 0, without the row), which the report's lineage
  // would then miss for good. They are written again from the recorded result.
  for (const auto& result : progress.rung_results) {
    const bool recorded = std::any_of(lineage.begin(), lineage.end(), [&result](const PbtStep& step) {
      return step.trial == result.trial && step.interval == result.rung && step.metric.has_value();
    });
    if (recorded) continue;
    PbtStep finished = pbt_->step(result.trial, result.rung);
    finished.metric = result.metric;
    commands.emplace_back(RecordPbtStep{std::move(finished), {}});
  }
  if (!decided.empty()) commands.emplace_back(RecordPbtStep{std::nullopt, std::move(decided)});
  return commands;
}

std::vector<std::string> SweepState::assignments(int trial, int rung) const {
  return parameters(trial, rung).assignments();
}

std::vector<Command> SweepState::receive(const WorkerMessage& message, double now) {
  Output out;
  if (const auto* hello_message = std::get_if<Hello>(&message)) {
    hello(*hello_message, out);
  } else {
    const auto [worker, job_id] = std::visit(
        [](const auto& report) -> std::pair<int, std::int64_t> {
          if constexpr (std::is_same_v<std::decay_t<decltype(report)>, Hello>)
            return {report.worker, 0};
          else
            return {report.worker, report.job_id};
        },
        message);
    std::vector<int> joiners;
    const std::vector<int> members = release(worker, job_id, now, joiners);
    const auto* handed_over = std::get_if<JobHandedOver>(&message);
    WorkerGroup& reporting = group_of(worker);
    const auto* stopped_there = std::get_if<JobInterrupted>(&message);
    if (reporting.joined_job >= 0 && stopped_there && !stopping_) {
      // A stop signal reached the joined job, not this sweep: its trial is requeued and its groups
      // leave; the sweep goes on.
      out.commands.emplace_back(
          RecordJobInterrupted{reporting.job_id, reporting.job.trial, stopped_there->steps, now});
      requeue(reporting.job);
      reporting.leaving = true;
      out.headline = ShowJobInterrupted{now - start_, reporting.job.trial, reporting.job.rung,
                                        stopped_there->steps.end_step, worker};
    } else if (handed_over && !stopping_) {
      hand_over(worker, members, joiners, *handed_over, now, out);
    } else {
      if (!joiners.empty())
        out.notes.emplace_back(ShowEndedBeforeHandover{now - start_, group_of(worker).job.trial, joiners});
      // A handover that ended as the sweep was stopping is an interruption: --resume requeues it.
      if (handed_over)
        interrupted(worker, handed_over->steps, stop_signal_, now, out);
      else if (const auto* stopped = std::get_if<JobInterrupted>(&message))
        interrupted(worker, stopped->steps, stopped->signal, now, out);
      else if (const auto* failure = std::get_if<JobFailed>(&message))
        failed(*failure, now, out);
      else
        result(std::get<JobResult>(message), members, now, out);
    }
    if (reporting.leaving && !reporting.left) {
      reporting.left = true;
      out.commands.emplace_back(SendStop{worker});
      std::vector<int> requeued;
      if (stopped_there && !stopping_) requeued.push_back(reporting.job.trial);
      ShowJoinedJob note = joined_job_note(now - start_, reporting.joined_job, /*left=*/true);
      note.workers.push_back(worker);
      note.requeued = std::move(requeued);
      out.notes.emplace_back(std::move(note));
    }
  }
  if (!stopping_) dispatch(now, out);
  return out.finish();
}

std::vector<Command> SweepState::join(int joined_job, int groups, double now) {
  Output out;
  ShowJoinedJob note = joined_job_note(now - start_, joined_job, /*left=*/false);
  for (int index = 0; index < groups; ++index) {
    note.workers.push_back(group_count());
    WorkerGroup group;
    group.joined_job = joined_job;
    groups_.push_back(group);
  }
  out.notes.emplace_back(std::move(note));
  return out.finish();
}

std::vector<Command> SweepState::leave(int joined_job, double now) {
  Output out;
  ShowJoinedJob note = joined_job_note(now - start_, joined_job, /*left=*/true);
  for (int worker = 0; worker < group_count(); ++worker) {
    WorkerGroup& group = group_of(worker);
    if (group.joined_job != joined_job || group.left) continue;
    group.leaving = true;
    if (group.busy) continue;  // it leaves with its report
    group.left = true;
    note.workers.push_back(worker);
    out.commands.emplace_back(SendStop{worker});
  }
  if (!note.workers.empty()) out.notes.emplace_back(std::move(note));
  return out.finish();
}

std::vector<Command> SweepState::drop(int joined_job, double now) {
  Output out;
  ShowJoinedJob note = joined_job_note(now - start_, joined_job, /*left=*/true);
  for (int worker = 0; worker < group_count(); ++worker) {
    WorkerGroup& group = group_of(worker);
    if (group.joined_job != joined_job || group.left) continue;
    note.workers.push_back(worker);
    if (group.busy) {
      out.commands.emplace_back(RecordJobLost{group.job_id, group.job.trial, now});
      requeue(group.job);
      note.requeued.push_back(group.job.trial);
      group.busy_seconds += now - group.started;
      group.busy = false;
    }
    group.left = true;
  }
  if (note.workers.empty()) return {};  // gone already
  out.notes.emplace_back(std::move(note));
  if (!stopping_) dispatch(now, out);
  return out.finish();
}

void SweepState::requeue(const Job& job) {
  if (std::find(requeued_.begin(), requeued_.end(), job) == requeued_.end()) requeued_.push_back(job);
}

std::vector<Command> SweepState::stop(int signal, double now) {
  Output out;
  if (!stopping_) begin_stop(signal, now, out);
  return out.finish();
}

bool SweepState::finished() const {
  return std::all_of(groups_.begin(), groups_.end(),
                     [](const WorkerGroup& group) { return group.left || (group.known && !group.busy); });
}

const WorkerGroup& SweepState::group(int worker) const {
  PHALANX_CHECK(worker >= 0 && worker < group_count(), "no worker group ", worker, " (", group_count(),
                " groups)");
  return groups_[static_cast<std::size_t>(worker)];
}

WorkerGroup& SweepState::group_of(int worker) {
  return const_cast<WorkerGroup&>(std::as_const(*this).group(worker));
}

int SweepState::leader_rank(int worker) const {
  const WorkerGroup& held = group(worker);
  PHALANX_CHECK(held.known && !held.hello.ranks.empty(), "worker ", worker, " has not said hello");
  return held.hello.ranks.front();
}

int SweepState::busy_groups() const {
  return static_cast<int>(
      std::count_if(groups_.begin(), groups_.end(), [](const WorkerGroup& group) { return group.busy; }));
}

double SweepState::busy_seconds() const {
  double seconds = 0;
  for (const auto& group : groups_) seconds += group.busy_seconds;
  return seconds;
}

std::vector<Standing> SweepState::standings() const {
  std::vector<Standing> standings;
  std::vector<bool> seen(static_cast<std::size_t>(asha_.started_trials()), false);
  // A trial that failed at a later rung keeps its earlier rung's result in ASHA's rankings; the
  // leaderboard leaves it out, as best/ and the report do (its checkpoints may be what failed).
  for (int rung = asha_.top_rung(); rung >= 0; --rung)
    for (const auto& [trial, metric] : asha_.ranking(rung))
      if (!seen[static_cast<std::size_t>(trial)] && !failed_trials_.contains(trial)) {
        seen[static_cast<std::size_t>(trial)] = true;
        standings.push_back({trial, rung, metric});
      }
  return standings;
}

void SweepState::hello(const Hello& message, Output& out) {
  WorkerGroup& group = group_of(message.worker);
  PHALANX_CHECK(!message.ranks.empty(), "worker ", message.worker, " said hello without ranks");
  group.known = true;
  group.hello = message;
  out.commands.emplace_back(
      RecordWorker{message.worker, message.ranks, message.device, message.threads, message.host});
}

std::vector<int> SweepState::release(int worker, std::int64_t job_id, double now, std::vector<int>& joiners) {
  WorkerGroup& group = group_of(worker);
  PHALANX_CHECK(group.busy && job_id == group.job_id, "worker ", worker, " reported a job it does not hold");
  const double seconds = now - group.started;
  const std::vector<int> members = job_groups(worker);
  for (const int member : members) {
    WorkerGroup& held = group_of(member);
    held.busy = false;
    held.busy_seconds += seconds;
    held.member_of = -1;
  }
  group.merged.clear();
  group.handover_asked = false;
  // Groups waiting to join this job take part only in a handover; otherwise they are free again.
  joiners = std::move(group.joiners);
  group.joiners.clear();
  for (const int joiner : joiners) group_of(joiner).joining = -1;
  return members;
}

// No idle tail: the job of `worker` on the groups `before` (itself first) stopped after a step
// with a checkpoint; the rest of its rung starts at once on those groups and the ones that were
// waiting to join, so a trial's groups only ever grow within a rung. The reporting group stays
// first, so its leader is the merged job's rank 0 and reports it.
void SweepState::hand_over(int worker, const std::vector<int>& before, const std::vector<int>& joiners,
                           const JobHandedOver& message, double now, Output& out) {
  WorkerGroup& group = group_of(worker);
  const JobSteps& steps = message.steps;
  measure(worker, before, steps, now - group.started, now);
  std::vector<int> members = before;
  members.insert(members.end(), joiners.begin(), joiners.end());
  JobStart next;
  next.job_id = ++last_job_id_;
  next.trial = group.job.trial;
  next.rung = group.job.rung;
  next.budget = asha_.budget(group.job.rung);
  next.worker = worker;
  next.device = group.hello.device;
  next.started = now;
  std::vector<JobGroup> rows;
  std::vector<int> ranks;
  for (const int member : members) {
    const auto& member_ranks = group_of(member).hello.ranks;
    rows.push_back({member, member_ranks});
    ranks.insert(ranks.end(), member_ranks.begin(), member_ranks.end());
  }
  group.cost = next.budget * static_cast<double>(steps.target_step - steps.end_step) /
               static_cast<double>(std::max<std::int64_t>(steps.target_step, 1));
  // The dispatch's estimate for the rest: the groups' measured speeds added up, times what merged
  // jobs achieved so far.
  const double speed = merged_speed(group.hello.gpu)
                           .speed(summed_speed(members, group_states(now)), static_cast<int>(members.size()));
  next.estimate_seconds = group.cost / std::max(speed, 1e-9);
  out.commands.emplace_back(RecordHandover{group.job_id, steps, now, next, rows});  // before the job is sent
  group.job_id = next.job_id;
  group.merged = members;
  for (const int member : members) {
    WorkerGroup& held = group_of(member);
    held.busy = true;
    held.started = now;
    held.joining = -1;
    held.member_of = member == worker ? -1 : worker;
  }
  for (const int member : members)
    out.commands.emplace_back(SendJob{member, next.job_id, next.trial, next.rung, next.budget, ranks});
  // The estimate and what it rests on, so that a user can see why groups join or wait.
  const MergedSpeed& merged = merged_speed(group.hello.gpu);
  out.headline =
      ShowJobHandedOver{now - start_,
                        next.trial,
                        next.rung,
                        steps.end_step,
                        members,
                        static_cast<int>(ranks.size()),
                        next.estimate_seconds,
                        merged.measured() ? std::optional<double>(merged.efficiency()) : std::nullopt};
}

void SweepState::interrupted(int worker, const JobSteps& steps, int signal, double now, Output& out) {
  const WorkerGroup& group = group_of(worker);
  out.commands.emplace_back(RecordJobInterrupted{group.job_id, group.job.trial, steps, now});
  ++interrupted_;
  // The signal reached this worker's ranks but maybe not rank 0: the whole sweep stops.
  if (!stopping_) begin_stop(signal, now, out);
  out.headline = ShowJobInterrupted{now - start_, group.job.trial, group.job.rung, steps.end_step, worker};
}

void SweepState::failed(const JobFailed& message, double now, Output& out) {
  const WorkerGroup& group = group_of(message.worker);
  failed_trials_.insert(group.job.trial);
  out.commands.emplace_back(RecordJobFailed{group.job_id, group.job.trial, message.message, now});
  if (pbt_)  // a failed trial no longer holds the population back
    if (auto decided = pbt_->fail(group.job.trial); !decided.empty())
      out.commands.emplace_back(RecordPbtStep{std::nullopt, std::move(decided)});
  out.commands.emplace_back(ShowJobFailed{now - start_, group.job.trial, message.worker, message.message});
}

void SweepState::result(const JobResult& message, const std::vector<int>& members, double now, Output& out) {
  const WorkerGroup& group = group_of(message.worker);
  const double seconds = now - group.started;
  measure(message.worker, members, message.steps, seconds, now);
  JobFinish finish;
  finish.job_id = group.job_id;
  finish.trial = group.job.trial;
  finish.rung = group.job.rung;
  finish.budget = asha_.budget(group.job.rung);
  finish.worker = message.worker;
  finish.device = group.hello.device;
  finish.metric = message.metric;
  finish.start_step = message.steps.start_step;
  finish.end_step = message.steps.end_step;
  finish.resumed_from = message.steps.resumed_from;
  finish.finished = now;
  finish.train_seconds = message.train_seconds;
  finish.images_per_sec = message.images_per_sec;
  finish.history = message.history;
  finish.completed = group.job.rung == asha_.top_rung();
  finish.worker_speed = group.speed;
  out.commands.emplace_back(RecordJobDone{finish});  // committed before ASHA's next jobs go out
  asha_.record(finish.trial, finish.rung, finish.metric);
  if (pbt_) {
    PbtStep finished = pbt_->step(finish.trial, finish.rung);
    finished.metric = finish.metric;
    auto decided = pbt_->record(finish.trial, finish.rung, finish.metric);
    out.commands.emplace_back(RecordPbtStep{std::move(finished), std::move(decided)});
  }
  ++results_;
  out.headline =
      ShowJobDone{now - start_, finish.trial,    finish.rung,         finish.budget, finish.metric,
                  members,      group.hello.gpu, group.hello.threads, seconds,       finish.start_step};
}

void SweepState::begin_stop(int signal, double now, Output& out) {
  stopping_ = true;
  stop_signal_ = signal;
  const auto running = std::count_if(groups_.begin(), groups_.end(), [](const WorkerGroup& group) {
    return group.busy && group.member_of < 0;
  });
  // A joined job's ranks get no signal of this job's: each of its busy groups is asked to stop
  // after its next step with a checkpoint, as a handover would, and reports the job interrupted.
  for (int worker = 0; worker < group_count(); ++worker) {
    WorkerGroup& group = group_of(worker);
    if (group.joined_job < 0 || !group.busy || group.handover_asked) continue;
    out.commands.emplace_back(SendHandover{worker, group.job_id});
    group.handover_asked = true;
  }
  out.commands.emplace_back(ShowStopBegun{now - start_, signal, static_cast<int>(running)});
}

void SweepState::dispatch(double now, Output& out) {
  // Free groups ask fastest first, so promotions go to the fast groups when several are free.
  std::vector<int> free_groups;
  for (int worker = 0; worker < group_count(); ++worker)
    if (group_of(worker).free()) free_groups.push_back(worker);
  auto states = group_states(now);
  std::stable_sort(free_groups.begin(), free_groups.end(), [&](int a, int b) {
    return effective_speed(states[static_cast<std::size_t>(a)], states) >
           effective_speed(states[static_cast<std::size_t>(b)], states);
  });
  for (const int worker : free_groups) {
    std::vector<Candidate> candidates;
    for (const auto& job : requeued_) candidates.push_back({job, cost(job)});
    for (const auto& job : pbt_ ? pbt_->candidates() : asha_.candidates())
      candidates.push_back({job, cost(job)});
    DispatchEstimate estimate;
    const int choice = choose_job(candidates, states, worker, &estimate);
    passed_over_ += estimate.passed_over;
    if (choice < 0) {
      join_running(worker, now, out);
      continue;
    }
    const Job chosen = candidates[static_cast<std::size_t>(choice)].job;
    const auto requeued = std::find(requeued_.begin(), requeued_.end(), chosen);
    Job job = chosen;
    if (requeued != requeued_.end() && !chosen.new_trial())
      requeued_.erase(requeued);
    else if (pbt_)
      asha_.restore_started((job = pbt_->take(chosen)).trial);  // the printer counts trials there
    else
      job = asha_.take(chosen);
    assign(worker, job, chosen.new_trial(), estimate, now, out);
    states = group_states(now);
  }
}

void SweepState::assign(int worker, const Job& job, bool new_trial, const DispatchEstimate& estimate,
                        double now, Output& out) {
  WorkerGroup& group = group_of(worker);
  JobStart start;
  start.job_id = ++last_job_id_;
  start.trial = job.trial;
  start.rung = job.rung;
  start.budget = asha_.budget(job.rung);
  start.worker = worker;
  start.device = group.hello.device;
  start.started = now;
  start.estimate_seconds = estimate.own_seconds;
  start.faster_group_seconds = estimate.faster_group_seconds;
  // A new trial's parameters are decided now, from the results recorded up to this message.
  std::optional<Proposal> proposal;
  if (new_trial) proposal = proposals_.propose(job.trial, asha_);
  out.commands.emplace_back(RecordJobStart{start, new_trial, std::move(proposal)});  // committed before the job is sent
  group.job_id = start.job_id;
  group.job = job;
  group.busy = true;
  group.started = now;
  group.cost = cost(job);
  out.commands.emplace_back(SendJob{worker, start.job_id, job.trial, job.rung, start.budget, {}});
}

// No idle tail: a free group that ASHA gave nothing joins the running job of its kind (GPU or
// CPU) with the most seconds left (dispatch.hpp, choose_join), which is asked to stop after its
// next step.
void SweepState::join_running(int worker, double now, Output& out) {
  if (!sweep_.join_running || stopping_) return;
  WorkerGroup& idle = group_of(worker);
  if (idle.joined_job >= 0) return;  // no MPI between jobs: a joined job's groups train alone
  const auto states = group_states(now);
  std::vector<RunningJob> running;
  for (int index = 0; index < group_count(); ++index) {
    const WorkerGroup& group = group_of(index);
    if (!group.busy || group.member_of >= 0 || group.joined_job >= 0) continue;
    RunningJob job;
    job.leader = index;
    job.trial = group.job.trial;
    job.joinable = true;
    job.gpu = group.hello.gpu;
    job.ranks = 0;
    const auto members = job_groups(index);
    for (const int member : members) {
      job.ranks += group_of(member).rank_count();
      job.joinable = job.joinable && group_of(member).hello.gpu == group.hello.gpu;
    }
    // Groups on their way to it count as joined already.
    for (const int joiner : group.joiners) job.ranks += group_of(joiner).rank_count();
    job.seconds_left = seconds_left_after_join(
        states[static_cast<std::size_t>(index)].busy_seconds_left, summed_speed(members, states),
        static_cast<int>(members.size()), summed_speed(group.joiners, states),
        static_cast<int>(group.joiners.size()), merged_speed(group.hello.gpu));
    running.push_back(job);
  }
  const int choice = choose_join(running, idle.hello.gpu, sweep_.join_min_seconds);
  if (choice < 0) return;
  const RunningJob& target = running[static_cast<std::size_t>(choice)];
  WorkerGroup& leader = group_of(target.leader);
  idle.joining = target.leader;
  leader.joiners.push_back(worker);
  if (!leader.handover_asked) {
    out.commands.emplace_back(SendHandover{target.leader, leader.job_id});
    leader.handover_asked = true;
  }
  out.notes.emplace_back(ShowJoin{now - start_, worker, idle.hello.ranks, target.trial,
                                  job_groups(target.leader), target.seconds_left, target.ranks});
}

// The budget a job trains: its rung's, less what the trial's previous rung trained (nothing
// where the job starts the trial: a new trial, or its bracket's first rung).
double SweepState::cost(const Job& job) const {
  return asha_.budget(job.rung) - (asha_.starts_trial(job) ? 0.0 : asha_.budget(job.rung - 1));
}

// Speed of the job a group trained on its own, or, for a merged job, how it compares with its
// groups' summed speeds (MergedSpeed), over the part of its rung it trained.
void SweepState::measure(int worker, const std::vector<int>& members, const JobSteps& steps, double seconds,
                         double now) {
  WorkerGroup& group = group_of(worker);
  const double budget = asha_.budget(group.job.rung);
  const double trained = static_cast<double>(steps.end_step - steps.start_step);
  if (members.size() == 1) {
    const double share = steps.target_step > 0 ? trained / static_cast<double>(steps.target_step) : 0;
    group.trained_units += budget * share;
    group.trained_seconds += seconds;
    if (group.trained_units > 0 && group.trained_seconds > 0)
      group.speed = group.trained_units / group.trained_seconds;
    return;
  }
  if (steps.target_step <= 0) return;
  merged_speed(group.hello.gpu)
      .record(budget * trained / static_cast<double>(steps.target_step), seconds,
              summed_speed(members, group_states(now)));
}

std::vector<GroupState> SweepState::group_states(double now) const {
  std::vector<GroupState> states;
  for (int worker = 0; worker < group_count(); ++worker) {
    const WorkerGroup& held = group(worker);
    states.push_back(GroupState{worker, held.hello.gpu, held.speed, 0.0, held.busy});
  }
  // Unmeasured speeds are filled in relative to the others; a merged job goes at the sum of its
  // groups' speeds times what merged jobs achieved so far (MergedSpeed), and each of its groups is
  // busy until it ends.
  for (int worker = 0; worker < group_count(); ++worker) {
    const WorkerGroup& held = group(worker);
    if (!held.busy || held.member_of >= 0) continue;
    const auto members = job_groups(worker);
    const double speed =
        merged_speed(held.hello.gpu).speed(summed_speed(members, states), static_cast<int>(members.size()));
    const double left = std::max(0.0, held.started + held.cost / std::max(speed, 1e-9) - now);
    for (const int member : members) states[static_cast<std::size_t>(member)].busy_seconds_left = left;
  }
  return states;
}

// The groups of `worker`'s current job: itself, or every group of its merged job (itself first).
std::vector<int> SweepState::job_groups(int worker) const {
  const WorkerGroup& held = group(worker);
  return held.merged.empty() ? std::vector<int>{worker} : held.merged;
}

}  // namespace phalanx::sweep
