// StopRequest: SIGTERM or SIGUSR1 (what Slurm sends before a preemption or the time limit) asks
// the training job to stop at the end of the current step with a checkpoint, instead of dying
// mid-step. The handler only sets a flag; the ranks agree on it collectively once per step, so
// they all stop after the same step even when the signal reaches them at different times.
#pragma once

#include <csignal>

namespace phalanx::train {

// Exit status of `phalanx train` after a stop on a signal with its checkpoint written (sysexits'
// EX_TEMPFAIL: "try again later"). The Slurm scripts turn it into `scontrol requeue`.
constexpr int preempted_exit_status = 75;

class StopRequest {
 public:
  // Installs the handlers for SIGTERM and SIGUSR1; the destructor restores the previous ones.
  // Signal dispositions belong to the process, so at most one StopRequest may exist at a time.
  StopRequest();
  ~StopRequest();
  StopRequest(const StopRequest&) = delete;
  StopRequest& operator=(const StopRequest&) = delete;

  // The signal that arrived (0 if none); async-signal-safe state read from normal code.
  static int signal_received();
  // Wall-clock seconds (since the epoch) when the first signal arrived; 0 if none.
  static double signal_time();
  // Forgets a received signal (tests run several jobs in one process).
  static void reset();

 private:
  struct sigaction previous_terminate_ {};
  struct sigaction previous_user_ {};
};

}  // namespace phalanx::train
