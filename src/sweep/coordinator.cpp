// The coordinator loop (see coordinator.hpp): receive a group leader's message, decode it, let the
// sweep's state decide (sweep_state.hpp), then do what it says in order: commit to the database,
// send jobs and handovers, print. The decisions live in the state; this file holds the MPI, the
// database, the clock and the end of the sweep (results.csv, best/, report.html).
#include "phalanx/sweep/coordinator.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <variant>

#include "join_listener.hpp"
#include "messages.hpp"
#include "phalanx/core/build_stamp.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/sweep/pbt_lineage.hpp"
#include "phalanx/sweep/protocol.hpp"
#include "phalanx/sweep/results_store.hpp"
#include "phalanx/sweep/search_space.hpp"
#include "phalanx/sweep/sweep_outputs.hpp"
#include "phalanx/sweep/sweep_report.hpp"
#include "phalanx/sweep/worker.hpp"
#include "phalanx/train/progress.hpp"
#include "phalanx/train/stop_request.hpp"
#include "sweep_printer.hpp"
#include "sweep_state.hpp"

namespace phalanx::sweep {
namespace {

class Coordinator {
 public:
  Coordinator(const CoordinatorOptions& options, const comm::Communicator& channel, double start)
      : options_(options),
        sweep_(*options.sweep),
        channel_(channel),
        store_(options.sweep_directory + "/sweep.db"),
        start_(start),
        state_(sweep_, options.groups, store_.last_job_id(), start),
        printer_(sweep_, train::live_terminal_output()) {}

  // True when a stop signal ended the sweep early.
  bool run() {
    if (state_.pbt()) create_pbt_lineage(store_.database());
    if (options_.resume) restore();
    store_.set_meta("definition", sweep_definition(sweep_));
    store_.set_meta("groups", std::to_string(options_.groups));
    printer_.header(state_);
    // Jobs may join from here on (sweep --join): join.json says where to ask.
    if (options_.accept_joins) joins_ = std::make_unique<JoinListener>(options_.sweep_directory);
    comm::Message message;
    for (;;) {
      // The signal reaches rank 0's process on StopRequest's thread; the workers see it at their
      // next step. From then on no job is handed out: the sweep ends when the busy groups have
      // reported (their trials interrupted with a checkpoint, or finished if at their last step).
      if (!state_.stopping() && train::StopRequest::signal_received())
        execute(state_.stop(train::StopRequest::signal_received(), wall_seconds_since_epoch()));
      const bool joins_said = joins_ && poll_joins();
      if (joins_said && state_.finished()) break;
      if (!channel_.try_receive_string(tag_to_coordinator, message)) {
        if (state_.stopping() && state_.finished()) break;
        if (!joins_said) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      execute(state_.receive(decode_worker_message(message.text), wall_seconds_since_epoch()));
      if (state_.finished()) break;
    }
    printer_.erase_live_block();
    store_.set_meta("promotions_left_to_faster_groups",
                    std::to_string(state_.passed_over() +
                                   std::stoi(store_.meta("promotions_left_to_faster_groups").value_or("0"))));
    if (state_.stopping()) {
      printer_.leaderboard(state_, false);
      const double signal_time = train::StopRequest::signal_time();
      printer_.stopped(
          state_,
          signal_time > 0 ? std::optional<double>(wall_seconds_since_epoch() - signal_time) : std::nullopt,
          store_.interrupted_jobs().size(), train::preempted_exit_status);
    } else {
      store_.stop_paused();
      printer_.leaderboard(state_, true);
      write_outputs();
      every_trial_failed_ = store_.failure_of_every_trial();
    }
    for (int worker = 0; worker < state_.group_count(); ++worker)
      if (!state_.group(worker).left) send(worker, stop_message());
    // The joined jobs read their stops and close their ends; then join.json goes.
    if (joins_) joins_->drain(10.0);
    joins_.reset();
    return state_.stopping();
  }

  // After run() to its end: set when every trial failed and none gave a result (failure_of_every_trial).
  const std::optional<std::string>& every_trial_failed() const { return every_trial_failed_; }

 private:
  std::optional<std::string> every_trial_failed_;
  // --resume: jobs a kill left running are requeued (their trials resume from their newest
  // checkpoint); ASHA's rungs and promotions are rebuilt from what the database recorded.
  //
  // A kill between a handover's checkpoint (and its "handover" event in the trial's metrics.jsonl)
  // and the handover's commit leaves the job 'running', with no 'handed_over' row: it is requeued
  // like any killed job and needs nothing of its own. The checkpoint was renamed into place before
  // the event was written and is the trial's newest, so the redo (run_job: find_latest_checkpoint)
  // starts exactly after the handover's step; the metrics keep every step up to it and the event,
  // and the redo logs the steps after it, each once. The database then says what happened: the
  // killed job 'interrupted' (no end step, as every killed job), its redo starting at the handover's
  // step. The groups that were to join are free in the new start, and may join the redo again.
  void restore() {
    store_.interrupt_running(wall_seconds_since_epoch());
    const RecordedProgress progress = store_.progress();
    state_.restore(progress);
    // PBT: a step a kill left undecided is decided again (the same) and carried out now.
    if (state_.pbt()) execute(state_.restore_pbt(progress, read_pbt_lineage(store_.database())));
    printer_.resuming(options_.sweep_directory, state_);
  }

  void send(int worker, const std::string& text) {
    // A joined job's groups are reached over its connection, its relay passing the text on.
    if (const int joined_job = state_.group(worker).joined_job; joined_job >= 0) {
      joins_->send(joined_job, worker, text);
      return;
    }
    // Group leaders are ranks of the sweep communicator, whose order is the world's.
    channel_.send_string(text, state_.leader_rank(worker), tag_to_worker);
  }

  // What joining and joined jobs said since the last poll (join_listener.hpp); true when any.
  bool poll_joins() {
    const double now = wall_seconds_since_epoch();
    const auto events = joins_->poll(now);
    for (const auto& event : events) {
      if (const auto* asked = std::get_if<JoinAsked>(&event)) {
        std::string refusal =
            join_refusal(asked->request, joins_->address().token, sweep_definition(sweep_), build_stamp());
        if (refusal.empty() && state_.stopping()) refusal = "the sweep is stopping";
        if (!refusal.empty()) {
          printer_.note(elapsed_line(now, "a job on " + asked->request.host + " asked to join and was refused: " +
                                              refusal));
          joins_->refuse(asked->connection, refusal);
          continue;
        }
        const int joined_job = joins_->welcome(asked->connection, state_.group_count());
        if (joined_job > 0) execute(state_.join(joined_job, asked->request.groups, now));
      } else if (const auto* report = std::get_if<JoinedReport>(&event)) {
        joined_report(*report, now);
      } else if (const auto* leaving = std::get_if<JoinedLeaving>(&event)) {
        execute(state_.leave(leaving->connection, now));
      } else if (const auto* gone = std::get_if<JoinedGone>(&event)) {
        execute(state_.drop(gone->connection, now));
      }
    }
    return !events.empty();
  }

  // A joined group leader's message. A group that has left may still send a late hello (it left
  // before it was heard): ignored, it has been told to stop. A job that speaks out of turn (not
  // the protocol, for a group not its own, a job its group does not hold) is cut off: its
  // connection closed, so that its relay stops its groups, and its jobs requeued.
  void joined_report(const JoinedReport& report, double now) {
    std::vector<Command> commands;
    try {
      const WorkerMessage message = decode_worker_message(report.text);
      const int worker = std::visit([](const auto& typed) { return typed.worker; }, message);
      PHALANX_CHECK(worker >= 0 && worker < state_.group_count() &&
                        state_.group(worker).joined_job == report.connection,
                    "worker ", worker, " is not a group of joined job ", report.connection);
      if (state_.group(worker).left) return;
      commands = state_.receive(message, now);
    } catch (const Error& error) {
      printer_.note(elapsed_line(now, "joined job " + std::to_string(report.connection) +
                                          " sent a message out of turn and is cut off: " + error.what()));
      joins_->close(report.connection);
      execute(state_.drop(report.connection, now));
      return;
    }
    execute(commands);
  }

  std::string elapsed_line(double now, const std::string& text) const {
    char head[32];
    std::snprintf(head, sizeof(head), "[%7.1f s] ", now - start_);
    return head + text;
  }

  void execute(const std::vector<Command>& commands) {
    for (const auto& command : commands) std::visit([this](const auto& typed) { execute(typed); }, command);
  }

  void execute(const RecordWorker& record) {
    store_.register_worker(record.worker, record.ranks, record.device, record.threads, record.host);
  }
  void execute(const RecordJobStart& record) {
    if (!record.new_trial) {
      store_.start_job(record.job);
      return;
    }
    const int trial = record.job.trial;
    const Proposal& proposal = record.proposal.value();
    const TrialParameters& parameters = proposal.parameters;
    nlohmann::json values = nlohmann::json::array();
    for (const auto& [key, value] : parameters.values) values.push_back({key, value});
    store_.start_job(record.job,
                     NewTrial{parameters.to_json().dump(),
                              config::to_yaml(config::trial_config(sweep_, parameters.assignments())),
                              parameters.seed, trial_directory(options_.sweep_directory, trial),
                              ProposalRecord{name_of(proposal.method), proposal.model_rung,
                                             nlohmann::json(proposal.fitted_on).dump(), values.dump()}});
  }
  void execute(const RecordJobDone& record) { store_.finish_job(record.job); }
  void execute(const RecordJobLost& record) { store_.lose_job(record.job_id, record.trial, record.finished); }
  void execute(const SendStop& stop) { send(stop.worker, stop_message()); }
  void execute(const RecordJobFailed& record) {
    store_.fail_job(record.job_id, record.trial, record.message, record.finished);
  }
  void execute(const RecordJobInterrupted& record) {
    store_.interrupt_job(record.job_id, record.trial, record.steps.start_step, record.steps.end_step,
                         record.steps.resumed_from, record.finished);
  }
  void execute(const RecordHandover& record) {
    store_.hand_over_job(record.job_id, record.steps.start_step, record.steps.end_step,
                         record.steps.resumed_from, record.finished, record.next, record.groups);
  }
  void execute(const SendJob& job) {
    send(job.worker, job_message(job.job_id, job.trial, job.rung, job.budget,
                                 state_.assignments(job.trial, job.rung), job.ranks));
  }
  // PBT: each end of an interval kept for others to copy, then each exploit's copy of its donor's
  // in place before the steps are committed, so a kill between them redoes the same on --resume.
  void execute(const RecordPbtStep& record) {
    const std::string& directory = options_.sweep_directory;
    const Pbt& pbt = *state_.pbt();
    if (record.finished && record.finished->interval < pbt.last_interval())
      keep_interval_checkpoint(directory, record.finished->trial, record.finished->interval);
    for (const auto& next : record.next) keep_interval_checkpoint(directory, next.trial, next.interval - 1);
    std::vector<std::string> copied, configs;
    for (const auto& next : record.next) {
      copied.push_back(next.exploited() ? copy_donor_checkpoint(directory, next.trial, next.parent_trial,
                                                                next.parent_interval)
                                              .substr(directory.size() + 1)
                                        : "");
      configs.push_back(config::to_yaml(config::trial_config(sweep_, next.parameters.assignments())));
    }
    record_pbt_steps(store_.database(), record.finished, record.next, pbt.budgets(), copied, configs);
  }
  void execute(const SendHandover& handover) { send(handover.worker, handover_message(handover.job_id)); }
  void execute(const ShowJobFailed& line) { printer_.show(line, state_); }
  void execute(const ShowStopBegun& line) { printer_.show(line); }
  void execute(const ShowProgress& progress) { printer_.show(progress, state_); }

  void write_outputs() {
    const bool maximize = sweep_.goal == config::Goal::Maximize;
    write_results_csv(store_.database(), options_.sweep_directory + "/results.csv");
    write_best(store_.database(), options_.sweep_directory, maximize);
    const std::string report = write_sweep_report(options_.sweep_directory);
    printer_.done(state_, wall_seconds_since_epoch() - start_, options_.sweep_directory, report);
  }

  const CoordinatorOptions& options_;
  const config::SweepConfig& sweep_;
  const comm::Communicator& channel_;
  ResultsStore store_;
  double start_;
  SweepState state_;
  SweepPrinter printer_;
  std::unique_ptr<JoinListener> joins_;
};

}  // namespace

bool run_coordinator(const CoordinatorOptions& options, const comm::Communicator& channel,
                     std::optional<std::string>* every_trial_failed) {
  Coordinator coordinator(options, channel, wall_seconds_since_epoch());
  const bool stopped = coordinator.run();
  if (every_trial_failed) *every_trial_failed = coordinator.every_trial_failed();
  return stopped;
}

}  // namespace phalanx::sweep
