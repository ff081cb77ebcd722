// StopRequest: SIGTERM or SIGUSR1 (what Slurm sends before a preemption or the time limit) asks
// the training job to stop at the end of the current step with a checkpoint, instead of dying
// mid-step. The ranks agree on it collectively once per step, so they all stop after the same
// step even when the signal reaches them at different times (or reaches only some of them).
#pragma once

#include <csignal>
#include <thread>

namespace phalanx::train {

// Exit status of `phalanx train` after a stop on a signal with its checkpoint written (sysexits'
// EX_TEMPFAIL: "try again later"). The Slurm scripts turn it into `scontrol requeue`.
constexpr int preempted_exit_status = 75;

class StopRequest {
 public:
  // Blocks SIGTERM and SIGUSR1 in the calling thread, and so in every thread it starts later (MPI's,
  // OpenMP's, the data loader's), and receives them on a thread of its own with sigtimedwait. No
  // thread is ever interrupted by them: a handler that interrupts a blocking call in a library
  // (poll, nanosleep) can break code that does not expect EINTR. Construct it before any other
  // thread exists; the destructor stops the thread and restores the previous signal mask.
  StopRequest();
  ~StopRequest();
  StopRequest(const StopRequest&) = delete;
  StopRequest& operator=(const StopRequest&) = delete;

  // The signal that arrived (0 if none).
  static int signal_received();
  // Wall-clock seconds (since the epoch) when the first signal arrived; 0 if none.
  static double signal_time();
  // Forgets a received signal (tests run several jobs in one process).
  static void reset();

 private:
  sigset_t previous_mask_{};
  std::thread receiver_;
};

}  // namespace phalanx::train
