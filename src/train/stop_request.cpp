// Signal handlers of StopRequest. They store the signal number and the time in lock-free atomics,
// which is all a handler may safely do; the training loop reads them between steps.
#include "phalanx/train/stop_request.hpp"

#include <time.h>

#include <atomic>

#include "phalanx/core/error.hpp"

namespace phalanx::train {
namespace {

std::atomic<int> received_signal{0};
std::atomic<long long> received_nanoseconds{0};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<long long>::is_always_lock_free,
              "signal handlers need lock-free atomics");

extern "C" void on_stop_signal(int signal_number) {
  int expected = 0;
  // The first signal's time is the one that counts for "signal to checkpoint" measurements.
  if (received_signal.compare_exchange_strong(expected, signal_number)) {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);  // async-signal-safe (POSIX)
    received_nanoseconds.store(static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec);
  }
}

}  // namespace

StopRequest::StopRequest() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: a signal must not make an interrupted read or MPI's polling fail with EINTR.
  action.sa_flags = SA_RESTART;
  PHALANX_CHECK(sigaction(SIGTERM, &action, &previous_terminate_) == 0, "sigaction(SIGTERM)");
  PHALANX_CHECK(sigaction(SIGUSR1, &action, &previous_user_) == 0, "sigaction(SIGUSR1)");
}

StopRequest::~StopRequest() {
  sigaction(SIGTERM, &previous_terminate_, nullptr);
  sigaction(SIGUSR1, &previous_user_, nullptr);
}

int StopRequest::signal_received() {
  return received_signal.load();
}

double StopRequest::signal_time() {
  return static_cast<double>(received_nanoseconds.load()) * 1e-9;
}

void StopRequest::reset() {
  received_signal.store(0);
  received_nanoseconds.store(0);
}

}  // namespace phalanx::train
