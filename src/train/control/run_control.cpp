// RunControl: the watchdog's action on a stall, the per-step agreement before the update and the
// straggler event. The agreement is one 32-byte all-reduce per step, the step's only collective
// besides the gradients' own; its cost is measured by bench/run_control.cpp (docs/BENCHMARKS.md).
#include "control/run_control.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <thread>

#include "phalanx/core/timer.hpp"
#include "phalanx/train/progress.hpp"
#include "phalanx/train/run_directory.hpp"
#include "phalanx/train/stop_request.hpp"

namespace phalanx::train {
namespace {

const char* signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}

}  // namespace

RunControl::RunControl(const comm::Communicator& communicator, const std::string& run_directory,
                       double timeout_seconds)
    : communicator_(communicator) {
  const int rank = communicator.rank();
  watchdog_ = std::make_unique<comm::Watchdog>(
      run_directory + "/heartbeat", rank, communicator.size(), communicator.host_name(), timeout_seconds,
      [rank, timeout_seconds](const comm::StallReport& report) {
        // Every waiting rank reaches the same verdict; the lowest rank that did not stall says it,
        // the others give it time to be heard before the job is torn down: it may have begun its
        // wait later (it was writing a checkpoint), so its watchdog fires later too, up to the
        // timeout after theirs (a fixed 2 s lost its report, and the job ended without a word).
        // Their heartbeats go on meanwhile (the watchdog's thread), so it names only the stopped.
        int reporter = 0;
        while (std::find(report.stalled_ranks.begin(), report.stalled_ranks.end(), reporter) !=
               report.stalled_ranks.end())
          ++reporter;
        if (rank == reporter) {
          std::fprintf(stderr, "phalanx: error: rank %d: %s\n", rank, report.message.c_str());
          std::fflush(stderr);
        } else {
          std::this_thread::sleep_for(std::chrono::duration<double>(timeout_seconds + 2));
        }
        // The main thread is blocked in MPI: only an abort from here ends the job.
        comm::MpiSession::abort(1);
      });
}

RunControl::~RunControl() = default;

void RunControl::enter(const char* stage, std::int64_t step, comm::StageKind kind) {
  watchdog_->enter(stage, step, kind);
}

StepAgreement RunControl::agree_before_update(std::int64_t step, bool gradients_finite, bool last_step) {
  // A signal reaches the ranks at slightly different times (or only some of them): agreeing once
  // per step makes them all stop after the same step. The second value finds the earliest arrival
  // (max of minus the time). The handover and the finite flag ride in the same reduction: the
  // finite flag must be agreed before the update, and one collective there serves all four. The
  // handover is not asked on the last step (a sweep's request then stays for the worker to drop).
  enter("stop agreement", step, comm::StageKind::Collective);
  const int received = StopRequest::signal_received();
  const bool handover = !last_step && handover_check_ && handover_check_();
  double values[4] = {static_cast<double>(received),
                      received ? -StopRequest::signal_time() : -std::numeric_limits<double>::max(),
                      handover ? 1.0 : 0.0, gradients_finite ? 0.0 : 1.0};
  communicator_.allreduce_max(values, 4);
  StepAgreement agreement;
  agreement.gradients_finite = values[3] == 0.0;
  if (last_step || (values[0] == 0 && values[2] == 0)) return agreement;
  agreement.stop = true;
  stop_agreed_time_ = wall_seconds_since_epoch();
  if (values[0] == 0) {
    handover_ = true;
    return agreement;
  }
  stop_signal_ = static_cast<int>(values[0]);
  first_signal_time_ = -values[1];
  return agreement;
}

void RunControl::end_of_step(std::int64_t step, double busy_seconds, bool log_interval,
                             RunDirectory& run_directory, Progress& progress) {
  stragglers_.add_step(busy_seconds);
  if (!log_interval) return;
  enter("straggler report", step, comm::StageKind::Collective);
  const auto summary = stragglers_.close_interval(communicator_);
  if (!summary || communicator_.size() == 1) return;
  run_directory.append_metrics({{"event", "straggler"},
                                {"step", step},
                                {"slowest_rank", summary->slowest_rank},
                                {"slowest_ms", summary->slowest_ms},
                                {"median_ms", summary->median_ms},
                                {"ratio", summary->ratio},
                                {"rank_ms", summary->rank_ms}});
  if (summary->ratio < straggler_print_ratio) return;
  char text[192];
  std::snprintf(text, sizeof(text),
                "straggler: rank %d busy %.1f ms per step, %.2fx the median %.1f ms (steps to %lld)",
                summary->slowest_rank, summary->slowest_ms, summary->ratio, summary->median_ms,
                static_cast<long long>(step));
  progress.line(text);
}

void RunControl::report_stop(std::int64_t step, const std::string& checkpoint, RunDirectory& run_directory,
                             Progress& progress) const {
  const double now = wall_seconds_since_epoch();
  if (handover_) {
    run_directory.append_metrics({{"event", "handover"},
                                  {"step", step},
                                  {"checkpoint", checkpoint},
                                  {"agreement_to_checkpoint_seconds", now - stop_agreed_time_},
                                  {"time", now}});
    progress.line("stopped after step " + std::to_string(step) + " for a handover: checkpoint " + checkpoint +
                  " written; the trial continues on a larger group");
    return;
  }
  run_directory.append_metrics({{"event", "preempted"},
                                {"step", step},
                                {"signal", signal_name(stop_signal_)},
                                {"checkpoint", checkpoint},
                                {"signal_time", first_signal_time_},
                                {"signal_to_agreement_seconds", stop_agreed_time_ - first_signal_time_},
                                {"signal_to_checkpoint_seconds", now - first_signal_time_},
                                {"time", now}});
  // The run directory is named in the advice: without --run-dir, a new run would start instead.
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.2f", now - first_signal_time_);
  progress.line("stopped by " + std::string(signal_name(stop_signal_)) + " after step " +
                std::to_string(step) + ": checkpoint " + checkpoint + " written " + seconds +
                " s after the signal; continue with " + "--run-dir " + run_directory.path() +
                " --resume auto (exit status " + std::to_string(preempted_exit_status) + ")");
}

}  // namespace phalanx::train
