// RunControl: what keeps a cluster job honest around the training step, in one object the
// trainer calls at a few points: the stall watchdog (comm::Watchdog), the straggler report and
// the per-step agreement of the ranks before the update (finite gradients, a stop signal from
// StopRequest, a handover). Each rank has one for the run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/watchdog.hpp"
#include "control/straggler_report.hpp"

namespace phalanx::train {

class Progress;
class RunDirectory;

// What every rank agreed on before a step's update (RunControl::agree_before_update).
struct StepAgreement {
  bool gradients_finite = true;  // the summed gradients are finite on every rank
  bool stop = false;             // a stop signal or a handover: every rank stops after this step
};

class RunControl {
 public:
  // Heartbeats go to <run_directory>/heartbeat; a collective that waits longer than
  // `timeout_seconds` (distributed.timeout_s) ends the job with the stalled rank named.
  RunControl(const comm::Communicator& communicator, const std::string& run_directory,
             double timeout_seconds);
  ~RunControl();

  // Marks the stage the main thread enters (for the watchdog); `stage` is a string literal.
  void enter(const char* stage, std::int64_t step, comm::StageKind kind);

  // Collective, once every step, between the gradient all-reduce and the update: the step's one
  // small collective (an all-reduce of four doubles). `gradients_finite` is this rank's test of
  // its summed gradients; the agreement says whether they are finite on every rank (so every rank
  // takes the update or skips it alike), and whether a stop signal reached any rank or the
  // caller's handover check (below) said yes on any rank: then every rank stops after this step.
  // On the run's `last_step` a stop is not taken (the step finishes the run anyway) and the
  // handover check is not asked.
  StepAgreement agree_before_update(std::int64_t step, bool gradients_finite, bool last_step);

  // After every step but the last: adds the step's busy time (step minus waiting for the other
  // ranks) and, when `log_interval` is true, reports stragglers (a collective then).
  void end_of_step(std::int64_t step, double busy_seconds, bool log_interval, RunDirectory& run_directory,
                   Progress& progress);

  // After the stop's checkpoint is written: records the "preempted" event (or, for a handover,
  // the "handover" event) and prints why.
  void report_stop(std::int64_t step, const std::string& checkpoint, RunDirectory& run_directory,
                   Progress& progress) const;

  // A caller's own reason to stop after a step with a checkpoint, asked on every rank in the
  // agreement of every step but the last (a sweep: the coordinator wants more ranks to take over the trial,
  // docs/SWEEPS.md "No idle tail"). A stop signal wins over it.
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
