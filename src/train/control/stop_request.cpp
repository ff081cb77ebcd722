// StopRequest: a thread that waits for SIGTERM/SIGUSR1 with sigtimedwait (the signals are blocked
// everywhere else) and records the first one and its time for the training loop to read.
#include "phalanx/train/stop_request.hpp"

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cerrno>

#include "phalanx/core/error.hpp"

namespace phalanx::train {
namespace {

std::atomic<int> received_signal{0};
std::atomic<double> received_time{0};
std::atomic<bool> receiver_running{false};

sigset_t stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  return signals;
}

double wall_seconds() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace

StopRequest::StopRequest() {
  const sigset_t signals = stop_signals();
  PHALANX_CHECK(pthread_sigmask(SIG_BLOCK, &signals, &previous_mask_) == 0, "pthread_sigmask");
  receiver_running.store(true);
  receiver_ = std::thread([signals] {
    // A short timeout lets the destructor end the thread without sending it a signal.
    const timespec timeout{0, 100'000'000};
    while (receiver_running.load()) {
      const int signal_number = sigtimedwait(&signals, nullptr, &timeout);
      if (signal_number <= 0) continue;  // timeout or EINTR
      // The first signal's time is the one that counts for "signal to checkpoint". This thread is
      // the only writer; the time goes first, so a reader that sees the signal sees its time (the
      // other order let the stop agreement read a time of 0).
      if (received_signal.load() != 0) continue;
      received_time.store(wall_seconds());
      received_signal.store(signal_number);
    }
  });
}

StopRequest::~StopRequest() {
  receiver_running.store(false);
  receiver_.join();
  pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
}

int StopRequest::signal_received() {
  return received_signal.load();
}

double StopRequest::signal_time() {
  return received_time.load();
}

void StopRequest::reset() {
  received_signal.store(0);
  received_time.store(0);
}

}  // namespace phalanx::train
