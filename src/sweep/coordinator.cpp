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
#include <thread>

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
  std::string device, ranks, host;
  int threads = 1;
  bool busy = false;
  std::int64_t job_id = 0;
  Job job;
  double cost = 0;  // budget units of the current job
  double started = 0;
  double busy_seconds = 0;
  double speed = 0;  // budget units per second over the jobs it finished
  double trained_units = 0, trained_seconds = 0;
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
        groups_(static_cast<std::size_t>(options.groups)) {}

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
  void restore() {
    store_.interrupt_running(wall_seconds_since_epoch());
    const auto& database = store_.database();
    for (const auto& row : database.rows("SELECT trial_id FROM trials"))
      asha_.restore_started(row["trial_id"].get<int>());
    for (const auto& row : database.rows("SELECT DISTINCT trial_id, rung FROM jobs WHERE rung > 0"))
      asha_.restore_promoted(row["trial_id"].get<int>(), row["rung"].get<int>());
    for (const auto& row : database.rows("SELECT trial_id, rung, metric FROM rung_results"))
      asha_.record(row["trial_id"].get<int>(), row["rung"].get<int>(), row["metric"].get<double>());
    // Jobs a kill left running, and jobs a stop signal interrupted (in this or an earlier stop).
    for (const auto& [trial, rung] : store_.interrupted_jobs())
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
      group.ranks = message.at("ranks");
      group.threads = message.at("threads").get<int>();
      group.host = message.at("host");
      if (leaders_.size() < groups_.size()) leaders_.resize(groups_.size(), -1);
      leaders_[static_cast<std::size_t>(worker)] = std::stoi(group.ranks.substr(0, group.ranks.find(',')));
      store_.register_worker(worker, group.ranks, group.device, group.threads, group.host);
      return;
    }
    PHALANX_CHECK(group.busy && message.at("job").get<std::int64_t>() == group.job_id, "worker ", worker,
                  " reported a job it does not hold");
    const double seconds = now - group.started;
    group.busy = false;
    group.busy_seconds += seconds;
    if (type == "interrupted") {
      const std::int64_t start_step = message.at("start_step"), end_step = message.at("end_step");
      store_.interrupt_job(group.job_id, group.job.trial, start_step, end_step, message.at("resumed_from"),
                           now);  // committed before the sweep ends
      ++interrupted_;
      // The signal reached this worker's ranks but maybe not rank 0: the whole sweep stops.
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
    // Speed in budget units per second of this job, counting only the part it trained.
    const double trained =
        end_step > 0 ? static_cast<double>(end_step - start_step) / static_cast<double>(end_step) : 0;
    // The running mean over the group's jobs: one job's speed varies with its trial's batch size and
    // model, the mean tracks the group's hardware.
    group.trained_units += asha_.budget(group.job.rung) * trained;
    group.trained_seconds += seconds;
    if (group.trained_units > 0 && group.trained_seconds > 0)
      group.speed = group.trained_units / group.trained_seconds;
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
    finish.history = message.at("history");
    finish.completed = group.job.rung == asha_.top_rung();
    finish.worker_speed = group.speed;
    store_.finish_job(finish);  // committed before ASHA acts on it
    asha_.record(group.job.trial, group.job.rung, metric);
    ++results_;
    char line[512];
    std::snprintf(line, sizeof(line),
                  "[%7.1f s] trial %3d rung %d (%s) %s %.4f  worker %d (%s, %d thr) %.1f s%s", now - start_,
                  group.job.trial, group.job.rung, budget_text(sweep_, finish.budget).c_str(),
                  sweep_.metric.c_str(), metric, worker, group.gpu ? "gpu" : "cpu", group.threads, seconds,
                  start_step > 0 ? (" resumed at step " + std::to_string(start_step)).c_str() : "");
    // Printed after dispatch(), so that the line shows who is busy on what comes next.
    pending_line_ = line;
  }

  void print_pending_line() {
    if (pending_line_.empty()) return;
    erase_live_block();
    std::printf("%s | %s\n", pending_line_.c_str(), status_line().c_str());
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
      if (groups_[worker].known && !groups_[worker].busy) free_groups.push_back(static_cast<int>(worker));
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
      if (choice < 0) continue;
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
      GroupState state{static_cast<int>(worker), group.gpu, group.speed, 0.0, group.busy};
      if (group.busy) {
        const double speed = effective_speed(state, {});
        state.busy_seconds_left = std::max(0.0, group.started + group.cost / std::max(speed, 1e-9) - now);
      }
      states.push_back(state);
    }
    // Unmeasured speeds are filled in relative to the others.
    for (auto& state : states)
      if (state.busy && state.speed <= 0)
        state.busy_seconds_left = std::max(
            0.0, groups_[static_cast<std::size_t>(state.worker)].started +
                     groups_[static_cast<std::size_t>(state.worker)].cost / effective_speed(state, states) -
                     now);
    return states;
  }

  void assign(int worker, const Job& job, bool new_trial, const DispatchEstimate& estimate) {
    Group& group = groups_[static_cast<std::size_t>(worker)];
    const auto parameters = sample_trial(sweep_, job.trial);
    JobStart start;
    start.trial = job.trial;
    start.rung = job.rung;
    start.budget = asha_.budget(job.rung);
    start.worker = worker;
    start.device = group.device;
    start.started = wall_seconds_since_epoch();
    start.new_trial = new_trial;
    start.run_dir = trial_directory(options_.sweep_directory, job.trial);
    start.estimate_seconds = estimate.own_seconds;
    start.faster_group_seconds = estimate.faster_group_seconds;
    if (new_trial) {
      start.parameters = parameters.to_json().dump();
      start.config = config::to_yaml(config::trial_config(sweep_, parameters.assignments()));
      start.seed = parameters.seed;
    }
    group.job_id = store_.start_job(start);  // committed before the job is sent
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
    for (const auto& group : groups_) busy += group.busy ? 1 : 0;
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
  std::deque<Job> requeued_;
  double start_ = 0;
  int results_ = 0;
  std::string pending_line_;
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
