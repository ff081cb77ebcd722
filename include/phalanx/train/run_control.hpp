// RunControl: what keeps a cluster job honest around the training step, in one object the
// trainer calls at a few points: the stall watchdog (comm::Watchdog), the straggler report and
// the collective agreement on a stop signal (StopRequest). Each rank has one for the run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/watchdog.hpp"
#include "phalanx/train/straggler_report.hpp"

namespace phalanx::train {

class Progress;
class RunDirectory;

class RunControl {
 public:
  // Heartbeats go to <run_directory>/heartbeat; a collective that waits longer than
  // `timeout_seconds` (distributed.timeout_s) ends the job with the stalled rank named.
  RunControl(const comm::Communicator& communicator, const std::string& run_directory,
             double timeout_seconds);
  ~RunControl();

  // Marks the stage the main thread enters (for the watchdog); `stage` is a string literal.
  void enter(const char* stage, std::int64_t step, comm::StageKind kind);

  // Collective, after every step: adds the step's busy time (step minus waiting for the other
  // ranks), reports stragglers when `log_interval` is true, and returns true when a stop signal
  // reached any rank, or the caller's `handover` check (below) said yes on any rank; then all
  // ranks return true after the same step.
  bool end_of_step(std::int64_t step, double busy_seconds, bool log_interval, RunDirectory& run_directory,
                   Progress& progress);

  // After the stop's checkpoint is written: records the "preempted" event (or, for a handover,
  // the "handover" event) and prints why.
  void report_stop(std::int64_t step, const std::string& checkpoint, RunDirectory& run_directory,
                   Progress& progress) const;

  // A caller's own reason to stop after a step with a checkpoint, asked on every rank after every
  // step (a sweep: the coordinator wants more ranks to take over the trial, docs/SWEEPS.md "No idle
  // tail"). A stop signal wins over it.
  void set_handover_check(std::function<bool()> check) { handover_check_ = std::move(check); }
  // True when the agreed stop was a handover, not a signal.
  bool stopped_for_handover() const { return handover_; }

 private:
  const comm::Communicator& communicator_;
  std::unique_ptr<comm::Watchdog> watchdog_;
  StragglerReport stragglers_;
  int stop_signal_ = 0;           // agreed over all ranks once a stop is requested
  double first_signal_time_ = 0;  // wall seconds when the first rank received it
  double stop_agreed_time_ = 0;   // wall seconds when the ranks agreed to stop
  std::function<bool()> handover_check_;
  bool handover_ = false;  // the agreed stop is a handover
};

}  // namespace phalanx::train
