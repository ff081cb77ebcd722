// RunControl: the watchdog's action on a stall, the per-step stop agreement and the straggler
// event. The stop agreement is one 16-byte all-reduce per step; its cost is measured in
// bench/bench_stop_agreement.cpp (docs/BENCHMARKS.md).
#include "phalanx/train/run_control.hpp"

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
      [rank](const comm::StallReport& report) {
        // Every waiting rank reaches the same verdict; the lowest rank that did not stall says it,
        // the others give it a moment to be heard before the job is torn down.
        int reporter = 0;
        while (std::find(report.stalled_ranks.begin(), report.stalled_ranks.end(), reporter) !=
               report.stalled_ranks.end())
          ++reporter;
        if (rank == reporter) {
          std::fprintf(stderr, "phalanx: error: rank %d: %s\n", rank, report.message.c_str());
          std::fflush(stderr);
        } else {
          std::this_thread::sleep_for(std::chrono::seconds(2));
        }
        // The main thread is blocked in MPI: only an abort from here ends the job.
        comm::MpiSession::abort(1);
      });
}

RunControl::~RunControl() = default;

void RunControl::enter(const char* stage, std::int64_t step, comm::StageKind kind) {
  watchdog_->enter(stage, step, kind);
}

bool RunControl::end_of_step(std::int64_t step, double busy_seconds, bool log_interval,
                             RunDirectory& run_directory, Progress& progress) {
  stragglers_.add_step(busy_seconds);
  if (log_interval) {
    enter("straggler report", step, comm::StageKind::Collective);
    if (const auto summary = stragglers_.close_interval(communicator_); summary && communicator_.size() > 1) {
      run_directory.append_metrics({{"event", "straggler"},
                                    {"step", step},
                                    {"slowest_rank", summary->slowest_rank},
                                    {"slowest_ms", summary->slowest_ms},
                                    {"median_ms", summary->median_ms},
                                    {"ratio", summary->ratio},
                                    {"rank_ms", summary->rank_ms}});
      if (summary->ratio >= straggler_print_ratio) {
        char text[192];
        std::snprintf(text, sizeof(text),
                      "straggler: rank %d busy %.1f ms per step, %.2fx the median %.1f ms (steps to %lld)",
                      summary->slowest_rank, summary->slowest_ms, summary->ratio, summary->median_ms,
                      static_cast<long long>(step));
        progress.line(text);
      }
    }
  }
  // A signal reaches the ranks at slightly different times (or only some of them): agreeing
  // once per step makes them all stop after the same step. The second value finds the earliest
  // arrival (max of minus the time).
  enter("stop agreement", step, comm::StageKind::Collective);
  const int received = StopRequest::signal_received();
  // The handover rides in the same reduction: no extra collective per step.
  double values[3] = {static_cast<double>(received),
                      received ? -StopRequest::signal_time() : -std::numeric_limits<double>::max(),
                      handover_check_ && handover_check_() ? 1.0 : 0.0};
  communicator_.allreduce_max(values, 3);
  if (values[0] == 0 && values[2] == 0) return false;
  if (values[0] == 0) {
    handover_ = true;
    stop_agreed_time_ = wall_seconds_since_epoch();
    return true;
  }
  stop_signal_ = static_cast<int>(values[0]);
  first_signal_time_ = -values[1];
  stop_agreed_time_ = wall_seconds_since_epoch();
  return true;
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
  char text[256];
  std::snprintf(text, sizeof(text),
                "stopped by %s after step %lld: checkpoint %s written %.2f s after the signal; continue with "
                "--resume auto (exit status %d)",
                signal_name(stop_signal_), static_cast<long long>(step), checkpoint.c_str(),
                now - first_signal_time_, preempted_exit_status);
  progress.line(text);
}

}  // namespace phalanx::train
