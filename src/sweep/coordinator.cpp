// The coordinator loop (see coordinator.hpp): receive a message, commit its consequence to the
// database, then act (record the rung, hand out the next jobs). Order of work: jobs requeued after
// a kill first, then ASHA's candidates; which of them a free group takes is the dispatch rule.
#include "phalanx/sweep/coordinator.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/sweep/asha.hpp"
#include "phalanx/sweep/dispatch.hpp"
#include "phalanx/sweep/protocol.hpp"
#include "phalanx/sweep/results_store.hpp"
#include "phalanx/sweep/search_space.hpp"
#include "phalanx/sweep/sweep_outputs.hpp"
#include "phalanx/sweep/sweep_report.hpp"
#include "phalanx/sweep/worker.hpp"
#include "phalanx/train/progress.hpp"
#include "phalanx/train/stop_request.hpp"

namespace phalanx::sweep {
namespace {

struct Group {
  bool known = false;  // said hello
  bool gpu = false;
  std::string device, host;
  std::vector<int> ranks;  // world ranks, the leader first
  int threads = 1;
  bool busy = false;
  std::int64_t job_id = 0;
  Job job;
  double cost = 0;  // budget units of the current job
  double started = 0;
  double busy_seconds = 0;
  double speed = 0;  // budget units per second over the jobs it finished (on its own)
  double trained_units = 0, trained_seconds = 0;
  int rank_count = 1;
  // No idle tail (docs/SWEEPS.md): a job on merged groups is held by the group that reports it.
  std::vector<int> merged;      // the groups of its current job when merged, this one first
  int member_of = -1;           // busy in the merged job that this group reports
  int joining = -1;             // free, waiting to join the job of this group
  std::vector<int> joiners;     // groups waiting to join this group's job
  bool handover_asked = false;  // the current job was asked to stop for them
};

std::string budget_text(const config::SweepConfig& sweep, double budget) {
  char text[64];
  std::snprintf(text, sizeof(text), "%g %s", budget, sweep.budget_unit.c_str());
  return text;
}

class Coordinator {
 public:
  Coordinator(const CoordinatorOptions& options, const comm::Communicator& channel)
      : options_(options),
        sweep_(*options.sweep),
        channel_(channel),
        asha_(sweep_.min_budget, sweep_.max_budget, sweep_.eta, sweep_.goal == "maximize",
              trial_count(sweep_), sweep_.scheduler == "full"),
        store_(options.sweep_directory + "/sweep.db"),
        groups_(static_cast<std::size_t>(options.groups)),
        last_job_id_(store_.last_job_id()) {}

  // True when a stop signal ended the sweep early.
  bool run() {
    start_ = wall_seconds_since_epoch();
    if (options_.resume) restore();
    store_.set_meta("definition", sweep_definition(sweep_));
    store_.set_meta("groups", std::to_string(options_.groups));
    print_header();
    comm::Message message;
    for (;;) {
      // The signal reaches rank 0's process on StopRequest's thread; the workers see it at their
      // next step. From then on no job is handed out: the sweep ends when the busy groups have
      // reported (their trials interrupted with a checkpoint, or finished if at their last step).
      if (!stopping_ && train::StopRequest::signal_received())
        begin_stop(train::StopRequest::signal_received());
      if (!channel_.try_receive_string(tag_to_coordinator, message)) {
        if (stopping_ && finished()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      handle(nlohmann::json::parse(message.text));
      if (!stopping_) dispatch();
      print_pending_line();
      if (finished()) break;
    }
    erase_live_block();
    store_.set_meta("promotions_left_to_faster_groups",
                    std::to_string(passed_over_ +
                                   std::stoi(store_.meta("promotions_left_to_faster_groups").value_or("0"))));
    if (stopping_) {
      print_leaderboard(false);
      print_stop();
    } else {
      store_.stop_paused();
      print_leaderboard(true);
      write_outputs();
    }
    for (std::size_t worker = 0; worker < groups_.size(); ++worker)
      send(static_cast<int>(worker), {{"type", "stop"}});
    return stopping_;
  }

 private:
  // --resume: jobs a kill left running are requeued (their trials resume from their newest
  // checkpoint); ASHA's rungs and promotions are rebuilt from what the database recorded.
  //
  // A kill between a handover's checkpoint (and its "handover" event in the trial's metrics.jsonl)
  // and hand_over_job's commit leaves the job 'running', with no 'handed_over' row: it is requeued
  // like any killed job and needs nothing of its own. The checkpoint was renamed into place before
  // the event was written and is the trial's newest, so the redo (run_job: find_latest_checkpoint)
  // starts exactly after the handover's step; the metrics keep every step up to it and the event,
  // and the redo logs the steps after it, each once. The database then says what happened: the
  // killed job 'interrupted' (no end step, as every killed job), its redo starting at the handover's
  // step. The groups that were to join are free in the new start, and may join the redo again.
  void restore() {
    store_.interrupt_running(wall_seconds_since_epoch());
    const RecordedProgress progress = store_.progress();
    for (const int trial : progress.trials) asha_.restore_started(trial);
    for (const auto& [trial, rung] : progress.promotions) asha_.restore_promoted(trial, rung);
    for (const auto& result : progress.rung_results) asha_.record(result.trial, result.rung, result.metric);
    // Jobs a kill left running, and jobs a stop signal interrupted (in this or an earlier stop).
    for (const auto& [trial, rung] : progress.interrupted)
      if (std::find(requeued_.begin(), requeued_.end(), Job{trial, rung}) == requeued_.end())
        requeued_.push_back(Job{trial, rung});
    std::printf("resuming %s: %d trials started, %zu interrupted jobs requeued\n",
                options_.sweep_directory.c_str(), asha_.started_trials(), requeued_.size());
  }

  void print_header() {
    std::string ladder;
    for (int rung = 0; rung < asha_.rung_count(); ++rung) {
      if (rung) ladder += ", ";
      ladder += budget_text(sweep_, asha_.budget(rung));
    }
    std::printf(
        "sweep %s: %d trials, %s search, %s scheduler (rungs: %s; eta %d), metric %s (%s), %d worker "
        "groups\n",
        sweep_.name.c_str(), asha_.max_trials(), sweep_.search.c_str(), sweep_.scheduler.c_str(),
        ladder.c_str(), sweep_.eta, sweep_.metric.c_str(), sweep_.goal.c_str(), options_.groups);
    std::fflush(stdout);
  }

  void send(int worker, const nlohmann::json& message) {
    // Group leaders are ranks of the sweep communicator; the CLI records them by group index.
    channel_.send_string(message.dump(), leader_rank(worker), tag_to_worker);
  }
  int leader_rank(int worker) const { return leaders_.at(static_cast<std::size_t>(worker)); }

  void handle(const nlohmann::json& message) {
    const std::string type = message.at("type");
    const int worker = message.at("worker").get<int>();
    Group& group = groups_.at(static_cast<std::size_t>(worker));
    const double now = wall_seconds_since_epoch();
    if (type == "hello") {
      group.known = true;
      group.gpu = message.at("gpu").get<bool>();
      group.device = message.at("device");
      group.ranks = message.at("ranks").get<std::vector<int>>();
      PHALANX_CHECK(!group.ranks.empty(), "worker ", worker, " said hello without ranks");
      group.threads = message.at("threads").get<int>();
      group.host = message.at("host");
      group.rank_count = static_cast<int>(group.ranks.size());
      if (leaders_.size() < groups_.size()) leaders_.resize(groups_.size(), -1);
      leaders_[static_cast<std::size_t>(worker)] = group.ranks.front();
      store_.register_worker(worker, group.ranks, group.device, group.threads, group.host);
      return;
    }
    PHALANX_CHECK(group.busy && message.at("job").get<std::int64_t>() == group.job_id, "worker ", worker,
                  " reported a job it does not hold");
    const double seconds = now - group.started;
    const std::vector<int> members = job_groups(worker);
    for (const int member : members) {
      Group& held = groups_[static_cast<std::size_t>(member)];
      held.busy = false;
      held.busy_seconds += seconds;
      held.member_of = -1;
    }
    group.merged.clear();
    group.handover_asked = false;
    // Groups waiting to join this job take part only in a handover; otherwise they are free again.
    std::vector<int> joiners = std::move(group.joiners);
    group.joiners.clear();
    for (const int joiner : joiners) groups_[static_cast<std::size_t>(joiner)].joining = -1;
    if (type == "handed_over" && !stopping_) {
      hand_over(worker, members, message, joiners, now);
      return;
    }
    if (!joiners.empty())
      join_lines_.push_back("[" + format_seconds(now - start_) + "] trial " +
                            std::to_string(group.job.trial) + " ended before its handover: worker(s) " +
                            worker_list(joiners) + " free again");
    if (type == "interrupted" || type == "handed_over") {
      const std::int64_t start_step = message.at("start_step"), end_step = message.at("end_step");
      store_.interrupt_job(group.job_id, group.job.trial, start_step, end_step, message.at("resumed_from"),
                           now);  // committed before the sweep ends
      ++interrupted_;
      // The signal reached this worker's ranks but maybe not rank 0: the whole sweep stops. (A
      // handover that ended as the sweep was stopping is an interruption too: --resume requeues it.)
      if (!stopping_) begin_stop(message.at("signal").get<int>());
      char line[256];
      std::snprintf(
          line, sizeof(line),
          "[%7.1f s] trial %3d rung %d interrupted after step %lld (checkpoint written) on worker %d",
          now - start_, group.job.trial, group.job.rung, static_cast<long long>(end_step), worker);
      pending_line_ = line;
      return;
    }
    if (type == "failed") {
      store_.fail_job(group.job_id, group.job.trial, message.at("message"), now);
      std::printf("[%7.1f s] trial %d failed on worker %d: %s\n", now - start_, group.job.trial, worker,
                  message.at("message").get<std::string>().c_str());
      std::fflush(stdout);
      return;
    }
    const double metric = message.at("metric").get<double>();
    const std::int64_t start_step = message.at("start_step"), end_step = message.at("end_step");
    measure(group, members, message, seconds);
    JobFinish finish;
    finish.job_id = group.job_id;
    finish.trial = group.job.trial;
    finish.rung = group.job.rung;
    finish.budget = asha_.budget(group.job.rung);
    finish.worker = worker;
    finish.device = group.device;
    finish.metric = metric;
    finish.start_step = start_step;
    finish.end_step = end_step;
    finish.resumed_from = message.at("resumed_from");
    finish.finished = now;
    finish.train_seconds = message.at("train_seconds");
    finish.images_per_sec = message.at("images_per_sec");
    for (const auto& entry : message.at("history"))
      finish.history.push_back({entry.value("epoch", std::int64_t{0}), entry.value("test_accuracy", 0.0),
                                entry.value("test_loss", 0.0), entry.value("train_loss", 0.0),
                                entry.value("epoch_seconds", 0.0)});
    finish.completed = group.job.rung == asha_.top_rung();
    finish.worker_speed = group.speed;
    store_.finish_job(finish);  // committed before ASHA acts on it
    asha_.record(group.job.trial, group.job.rung, metric);
    ++results_;
    char line[512];
    std::snprintf(
        line, sizeof(line), "[%7.1f s] trial %3d rung %d (%s) %s %.4f  worker %s (%s, %d thr) %.1f s%s",
        now - start_, group.job.trial, group.job.rung, budget_text(sweep_, finish.budget).c_str(),
        sweep_.metric.c_str(), metric, worker_list(members).c_str(), group.gpu ? "gpu" : "cpu", group.threads,
        seconds, start_step > 0 ? (" resumed at step " + std::to_string(start_step)).c_str() : "");
    // Printed after dispatch(), so that the line shows who is busy on what comes next.
    pending_line_ = line;
  }

  // The groups of `worker`'s current job: itself, or every group of its merged job (itself first).
  std::vector<int> job_groups(int worker) const {
    const Group& group = groups_[static_cast<std::size_t>(worker)];
    return group.merged.empty() ? std::vector<int>{worker} : group.merged;
  }

  static std::string format_seconds(double seconds) {
    char text[32];
    std::snprintf(text, sizeof(text), "%7.1f s", seconds);
    return text;
  }

  static std::string rank_list(const std::vector<int>& ranks) {
    std::string text;
    for (const int rank : ranks) {
      if (!text.empty()) text += ',';
      text += std::to_string(rank);
    }
    return text;
  }

  static std::string worker_list(const std::vector<int>& workers) {
    std::string text;
    for (const int worker : workers) {
      if (!text.empty()) text += '+';
      text += std::to_string(worker);
    }
    return text;
  }

  // Speed in budget units per second of a job the group trained on its own, counting only the
  // part it trained. The running mean over the group's jobs: one job's speed varies with its
  // trial's batch size and model, the mean tracks the group's hardware.
  void measure_speed(Group& group, const nlohmann::json& message, double seconds) {
    const std::int64_t start_step = message.at("start_step"), end_step = message.at("end_step");
    const std::int64_t target = message.value("target_step", end_step);
    const double trained =
        target > 0 ? static_cast<double>(end_step - start_step) / static_cast<double>(target) : 0;
    group.trained_units += asha_.budget(group.job.rung) * trained;
    group.trained_seconds += seconds;
    if (group.trained_units > 0 && group.trained_seconds > 0)
      group.speed = group.trained_units / group.trained_seconds;
  }

  // What a job that ended tells about speeds: a lone group's own speed, or how close a merged job
  // came to the sum of its groups' speeds. `seconds` count from the job's start (a merged job's
  // resume included: it is part of what a join costs).
  void measure(Group& group, const std::vector<int>& members, const nlohmann::json& message, double seconds) {
    if (members.size() == 1) {
      measure_speed(group, message, seconds);
      return;
    }
    const std::int64_t start_step = message.at("start_step"), end_step = message.at("end_step");
    const std::int64_t target = message.value("target_step", end_step);
    if (target <= 0) return;
    const double units = asha_.budget(group.job.rung) * static_cast<double>(end_step - start_step) /
                         static_cast<double>(target);
    merged_speed(group.gpu).record(units, seconds, summed_speed(members, group_states()));
  }

  // No idle tail: the job of `worker` on the groups `before` (itself first) stopped after a step
  // with a checkpoint; the rest of its rung starts at once on those groups and the ones that were
  // waiting to join (docs/SWEEPS.md), so a trial's groups only ever grow within a rung. The
  // reporting group stays first, so its leader is the merged job's rank 0 and reports it.
  void hand_over(int worker, const std::vector<int>& before, const nlohmann::json& message,
                 const std::vector<int>& joiners, double now) {
    Group& group = groups_[static_cast<std::size_t>(worker)];
    measure(group, before, message, now - group.started);
    std::vector<int> members = before;
    members.insert(members.end(), joiners.begin(), joiners.end());
    const std::int64_t start_step = message.at("start_step"), end_step = message.at("end_step");
    const std::int64_t target = message.at("target_step");
    JobStart next;
    next.job_id = ++last_job_id_;
    next.trial = group.job.trial;
    next.rung = group.job.rung;
    next.budget = asha_.budget(group.job.rung);
    next.worker = worker;
    next.device = group.device;
    next.started = now;
    std::vector<JobGroup> rows;
    std::vector<int> ranks;
    for (const int member : members) {
      const Group& held = groups_[static_cast<std::size_t>(member)];
      rows.push_back({member, held.ranks});
      ranks.insert(ranks.end(), held.ranks.begin(), held.ranks.end());
    }
    group.cost = next.budget * static_cast<double>(target - end_step) /
                 static_cast<double>(std::max<std::int64_t>(target, 1));
    // The dispatch's estimate for the rest: the groups' measured speeds added up, times what merged
    // jobs achieved so far.
    const auto states = group_states();
    const double speed =
        merged_speed(group.gpu).speed(summed_speed(members, states), static_cast<int>(members.size()));
    next.estimate_seconds = group.cost / std::max(speed, 1e-9);
    store_.hand_over_job(group.job_id, start_step, end_step, message.at("resumed_from"), now, next,
                         rows);  // committed before the job is sent
    group.job_id = next.job_id;
    group.merged = members;
    for (const int member : members) {
      Group& held = groups_[static_cast<std::size_t>(member)];
      held.busy = true;
      held.started = now;
      held.joining = -1;
      held.member_of = member == worker ? -1 : worker;
    }
    const auto parameters = sample_trial(sweep_, group.job.trial);
    for (const int member : members)
      send(member, {{"type", "job"},
                    {"job", group.job_id},
                    {"trial", group.job.trial},
                    {"rung", group.job.rung},
                    {"budget", next.budget},
                    {"assignments", parameters.assignments()},
                    {"ranks", ranks}});
    // The estimate and what it rests on, so that a user can see why groups join or wait.
    char share[96] = "";
    if (merged_speed(group.gpu).measured())
      std::snprintf(share, sizeof(share), ", at %.0f%% of their summed speed as merged jobs so far",
                    100.0 * merged_speed(group.gpu).efficiency());
    char line[512];
    std::snprintf(
        line, sizeof(line),
        "[%7.1f s] trial %3d rung %d handed over after step %lld (checkpoint written): continues on "
        "workers %s (%zu ranks), same global batch, about %.0f s%s",
        now - start_, group.job.trial, group.job.rung, static_cast<long long>(end_step),
        worker_list(members).c_str(), ranks.size(), next.estimate_seconds, share);
    pending_line_ = line;
  }

  // No idle tail: a free group that ASHA gave nothing joins the running job of its kind (GPU or
  // CPU) with the most seconds left (dispatch.hpp, choose_join), which is asked to stop after its
  // next step.
  void join_running(int worker) {
    Group& idle = groups_[static_cast<std::size_t>(worker)];
    if (!sweep_.join_running || stopping_) return;
    const auto states = group_states();
    std::vector<RunningJob> running;
    for (std::size_t index = 0; index < groups_.size(); ++index) {
      const Group& group = groups_[index];
      if (!group.busy || group.member_of >= 0) continue;
      RunningJob job;
      job.leader = static_cast<int>(index);
      job.trial = group.job.trial;
      job.seconds_left = states[index].busy_seconds_left;
      job.joinable = true;
      job.gpu = group.gpu;
      job.ranks = 0;
      const auto members = job_groups(static_cast<int>(index));
      for (const int member : members) {
        job.ranks += groups_[static_cast<std::size_t>(member)].rank_count;
        job.joinable = job.joinable && groups_[static_cast<std::size_t>(member)].gpu == group.gpu;
      }
      // Groups on their way to it count as joined already.
      for (const int joiner : group.joiners)
        job.ranks += groups_[static_cast<std::size_t>(joiner)].rank_count;
      job.seconds_left =
          seconds_left_after_join(job.seconds_left, summed_speed(members, states),
                                  static_cast<int>(members.size()), summed_speed(group.joiners, states),
                                  static_cast<int>(group.joiners.size()), merged_speed(group.gpu));
      running.push_back(job);
    }
    const int choice = choose_join(running, idle.gpu, sweep_.join_min_seconds);
    if (choice < 0) return;
    const RunningJob& target = running[static_cast<std::size_t>(choice)];
    Group& leader = groups_[static_cast<std::size_t>(target.leader)];
    idle.joining = target.leader;
    leader.joiners.push_back(worker);
    if (!leader.handover_asked) {
      send(target.leader, {{"type", "handover"}, {"job", leader.job_id}});
      leader.handover_asked = true;
    }
    char line[256];
    std::snprintf(
        line, sizeof(line),
        "[%7.1f s] worker %d (ranks %s) has nothing from ASHA: joins trial %d on worker %s (about %.0f s "
        "left on %d ranks) after its next step",
        wall_seconds_since_epoch() - start_, worker, rank_list(idle.ranks).c_str(), target.trial,
        worker_list(job_groups(target.leader)).c_str(), target.seconds_left, target.ranks);
    join_lines_.push_back(line);  // after the line of the result that freed the group
  }

  void print_pending_line() {
    if (pending_line_.empty() && join_lines_.empty()) return;
    erase_live_block();
    if (!pending_line_.empty()) std::printf("%s | %s\n", pending_line_.c_str(), status_line().c_str());
    for (const auto& line : join_lines_) std::printf("%s\n", line.c_str());
    join_lines_.clear();
    if (pending_line_.empty()) {
      std::fflush(stdout);
      return;
    }
    pending_line_.clear();
    // On a terminal the leaderboard stays below the event lines, redrawn after each; in a log it
    // is printed every 10 results.
    if (live_)
      live_block_lines_ = print_leaderboard(false);
    else if (results_ % 10 == 0)
      print_leaderboard(false);
    std::fflush(stdout);
  }

  void erase_live_block() {
    if (live_block_lines_ > 0) std::printf("\033[%dA\033[J", live_block_lines_);
    live_block_lines_ = 0;
  }

  std::string status_line() const {
    std::string rungs;
    for (int rung = 0; rung < asha_.rung_count(); ++rung) {
      if (rung) rungs += "/";
      rungs += std::to_string(asha_.ranking(rung).size());
    }
    int busy = 0;
    for (const auto& group : groups_) busy += group.busy ? 1 : 0;
    std::string best = "-";
    const auto ranking = best_ranking();
    if (!ranking.empty()) {
      char text[96];
      std::snprintf(text, sizeof(text), "trial %d %.4f (rung %d)", ranking.front().trial,
                    ranking.front().metric, ranking.front().rung);
      best = text;
    }
    return "rungs " + rungs + " | busy " + std::to_string(busy) + "/" + std::to_string(groups_.size()) +
           " | best " + best;
  }

  struct Standing {
    int trial;
    int rung;
    double metric;
  };
  // Trials by their highest rung, then metric: what the leaderboard and best/ rank by.
  std::vector<Standing> best_ranking() const {
    std::vector<Standing> standings;
    std::vector<bool> seen(static_cast<std::size_t>(asha_.started_trials()), false);
    for (int rung = asha_.top_rung(); rung >= 0; --rung)
      for (const auto& [trial, metric] : asha_.ranking(rung))
        if (!seen[static_cast<std::size_t>(trial)]) {
          seen[static_cast<std::size_t>(trial)] = true;
          standings.push_back({trial, rung, metric});
        }
    return standings;
  }

  // Returns the number of lines printed.
  int print_leaderboard(bool final) {
    const auto standings = best_ranking();
    std::printf("%s top trials (%s):\n", final ? "final" : "current", sweep_.metric.c_str());
    const std::size_t shown = std::min<std::size_t>(5, standings.size());
    for (std::size_t index = 0; index < shown; ++index) {
      const auto parameters = sample_trial(sweep_, standings[index].trial).to_json().dump();
      std::printf("  %zu. trial %3d  rung %d  %.4f  %s\n", index + 1, standings[index].trial,
                  standings[index].rung, standings[index].metric, parameters.c_str());
    }
    std::fflush(stdout);
    return 1 + static_cast<int>(shown);
  }

  void dispatch() {
    // Free groups ask fastest first, so promotions go to the fast groups when several are free.
    std::vector<int> free_groups;
    for (std::size_t worker = 0; worker < groups_.size(); ++worker)
      if (groups_[worker].known && !groups_[worker].busy && groups_[worker].joining < 0)
        free_groups.push_back(static_cast<int>(worker));
    auto states = group_states();
    std::stable_sort(free_groups.begin(), free_groups.end(), [&](int a, int b) {
      return effective_speed(states[static_cast<std::size_t>(a)], states) >
             effective_speed(states[static_cast<std::size_t>(b)], states);
    });
    for (const int worker : free_groups) {
      std::vector<Candidate> candidates;
      for (const auto& job : requeued_) candidates.push_back({job, cost(job)});
      for (const auto& job : asha_.candidates()) candidates.push_back({job, cost(job)});
      DispatchEstimate estimate;
      const int choice = choose_job(candidates, states, worker, &estimate);
      passed_over_ += estimate.passed_over;
      if (choice < 0) {
        join_running(worker);
        continue;
      }
      const Job chosen = candidates[static_cast<std::size_t>(choice)].job;
      const auto requeued = std::find(requeued_.begin(), requeued_.end(), chosen);
      Job job = chosen;
      if (requeued != requeued_.end() && !chosen.new_trial())
        requeued_.erase(requeued);
      else
        job = asha_.take(chosen);
      assign(worker, job, chosen.new_trial(), estimate);
      states = group_states();
    }
  }

  double cost(const Job& job) const {
    return asha_.budget(job.rung) - (job.rung > 0 ? asha_.budget(job.rung - 1) : 0.0);
  }

  std::vector<GroupState> group_states() const {
    const double now = wall_seconds_since_epoch();
    std::vector<GroupState> states;
    for (std::size_t worker = 0; worker < groups_.size(); ++worker) {
      const Group& group = groups_[worker];
      states.push_back(GroupState{static_cast<int>(worker), group.gpu, group.speed, 0.0, group.busy});
    }
    // Unmeasured speeds are filled in relative to the others; a merged job goes at the sum of its
    // groups' speeds times what merged jobs achieved so far (MergedSpeed), and each of its groups is
    // busy until it ends.
    for (std::size_t worker = 0; worker < groups_.size(); ++worker) {
      const Group& group = groups_[worker];
      if (!group.busy || group.member_of >= 0) continue;
      const auto members = job_groups(static_cast<int>(worker));
      const double speed =
          merged_speed(group.gpu).speed(summed_speed(members, states), static_cast<int>(members.size()));
      const double left = std::max(0.0, group.started + group.cost / std::max(speed, 1e-9) - now);
      for (const int member : members) states[static_cast<std::size_t>(member)].busy_seconds_left = left;
    }
    return states;
  }

  MergedSpeed& merged_speed(bool gpu) { return merged_speeds_[gpu ? 1 : 0]; }
  const MergedSpeed& merged_speed(bool gpu) const { return merged_speeds_[gpu ? 1 : 0]; }

  // The speeds of `members` added up, unmeasured ones filled in as effective_speed() does.
  static double summed_speed(const std::vector<int>& members, const std::vector<GroupState>& states) {
    double speed = 0;
    for (const int member : members)
      speed += effective_speed(states[static_cast<std::size_t>(member)], states);
    return speed;
  }

  void assign(int worker, const Job& job, bool new_trial, const DispatchEstimate& estimate) {
    Group& group = groups_[static_cast<std::size_t>(worker)];
    const auto parameters = sample_trial(sweep_, job.trial);
    JobStart start;
    start.job_id = ++last_job_id_;
    start.trial = job.trial;
    start.rung = job.rung;
    start.budget = asha_.budget(job.rung);
    start.worker = worker;
    start.device = group.device;
    start.started = wall_seconds_since_epoch();
    start.estimate_seconds = estimate.own_seconds;
    start.faster_group_seconds = estimate.faster_group_seconds;
    std::optional<NewTrial> trial;
    if (new_trial)
      trial = NewTrial{parameters.to_json().dump(),
                       config::to_yaml(config::trial_config(sweep_, parameters.assignments())),
                       parameters.seed, trial_directory(options_.sweep_directory, job.trial)};
    store_.start_job(start, trial);  // committed before the job is sent
    group.job_id = start.job_id;
    group.job = job;
    group.busy = true;
    group.started = start.started;
    group.cost = cost(job);
    send(worker, {{"type", "job"},
                  {"job", group.job_id},
                  {"trial", job.trial},
                  {"rung", job.rung},
                  {"budget", start.budget},
                  {"assignments", parameters.assignments()}});
  }

  void begin_stop(int signal_number) {
    stopping_ = true;
    stop_signal_ = signal_number;
    erase_live_block();
    int busy = 0;
    for (const auto& group : groups_) busy += group.busy && group.member_of < 0 ? 1 : 0;
    std::printf("[%7.1f s] %s: no new jobs; waiting for %d running trial(s) to stop with a checkpoint\n",
                wall_seconds_since_epoch() - start_, signal_name(signal_number), busy);
    std::fflush(stdout);
  }

  static const char* signal_name(int signal_number) {
    switch (signal_number) {
      case SIGTERM: return "SIGTERM";
      case SIGUSR1: return "SIGUSR1";
      default: return "a stop signal";
    }
  }

  void print_stop() const {
    const double signal_time = train::StopRequest::signal_time();
    char after[64] = "";
    if (signal_time > 0)
      std::snprintf(after, sizeof(after), " %.2f s after the signal",
                    wall_seconds_since_epoch() - signal_time);
    std::printf(
        "sweep stopped by %s%s: %d running trial(s) interrupted with a checkpoint, %zu job(s) waiting; "
        "continue with --resume (exit status %d)\n",
        signal_name(stop_signal_), after, interrupted_, store_.interrupted_jobs().size(),
        train::preempted_exit_status);
    std::fflush(stdout);
  }

  bool finished() const {
    for (const auto& group : groups_)
      if (!group.known || group.busy) return false;
    // Everyone is free and dispatch() gave nobody anything: nothing can change any more.
    return true;
  }

  void write_outputs() {
    const bool maximize = sweep_.goal == "maximize";
    write_results_csv(store_.database(), options_.sweep_directory + "/results.csv");
    write_best(store_.database(), options_.sweep_directory, maximize);
    const std::string report = write_sweep_report(options_.sweep_directory);
    const double wall = wall_seconds_since_epoch() - start_;
    double busy = 0;
    for (const auto& group : groups_) busy += group.busy_seconds;
    std::printf(
        "sweep done in %.1f s: %d trials, worker utilisation %.1f%% (busy time / (groups x wall) since this "
        "start); %d promotions left by a slower group to a faster one\nresults: %s/results.csv, best: "
        "%s/best, "
        "report: %s\n",
        wall, asha_.started_trials(),
        100.0 * busy / std::max(1e-9, wall * static_cast<double>(groups_.size())), passed_over_,
        options_.sweep_directory.c_str(), options_.sweep_directory.c_str(), report.c_str());
    std::fflush(stdout);
  }

  const CoordinatorOptions& options_;
  const config::SweepConfig& sweep_;
  const comm::Communicator& channel_;
  Asha asha_;
  ResultsStore store_;
  std::vector<Group> groups_;
  std::vector<int> leaders_;
  std::int64_t last_job_id_;  // jobs are numbered on from the database's last
  std::deque<Job> requeued_;
  double start_ = 0;
  int results_ = 0;
  std::string pending_line_;
  // How merged jobs compare with their groups' speeds, for CPU [0] and GPU [1] groups apart: MPI
  // over shared cores and NCCL over GPUs differ in what a merge costs.
  MergedSpeed merged_speeds_[2];
  std::vector<std::string> join_lines_;  // groups that chose a running trial to join (no idle tail)
  int passed_over_ = 0;
  bool live_ = train::live_terminal_output();
  int live_block_lines_ = 0;
  bool stopping_ = false;  // a stop signal arrived: no new jobs, end when the busy groups reported
  int stop_signal_ = 0;
  int interrupted_ = 0;  // jobs stopped by the signal in this run
                         // a slower group left to a faster one
};

}  // namespace

std::string sweep_definition(const config::SweepConfig& sweep) {
  nlohmann::json space = nlohmann::json::array();
  for (const auto& parameter : sweep.space)
    space.push_back({{"key", parameter.key},
                     {"type", parameter.type},
                     {"values", parameter.values},
                     {"low", parameter.low},
                     {"high", parameter.high}});
  const nlohmann::json definition = {{"seed", sweep.seed},
                                     {"search", sweep.search},
                                     {"scheduler", sweep.scheduler},
                                     {"trials", trial_count(sweep)},
                                     {"metric", sweep.metric},
                                     {"goal", sweep.goal},
                                     {"budget",
                                      {{"unit", sweep.budget_unit},
                                       {"min", sweep.min_budget},
                                       {"max", sweep.max_budget},
                                       {"eta", sweep.eta}}},
                                     {"space", space},
                                     {"base", config::to_yaml(sweep.base)}};
  return definition.dump(1);
}

bool run_coordinator(const CoordinatorOptions& options, const comm::Communicator& channel) {
  return Coordinator(options, channel).run();
}

}  // namespace phalanx::sweep
