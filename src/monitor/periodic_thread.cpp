// The sampling thread of the monitors: sleeps on a condition variable between runs so that the
// destructor can stop it within microseconds, whatever the period.
#include "phalanx/monitor/periodic_thread.hpp"

#include <utility>

namespace phalanx::monitor {

PeriodicThread::PeriodicThread(std::chrono::milliseconds period, std::function<void()> task)
    : period_(period), task_(std::move(task)), thread_([this] { run(); }) {}

PeriodicThread::~PeriodicThread() {
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void PeriodicThread::run() {
  // Deadlines advance by whole periods so that a slow task does not make the period drift.
  auto next_run = std::chrono::steady_clock::now() + period_;
  std::unique_lock lock(mutex_);
  while (true) {
    if (wake_.wait_until(lock, next_run, [this] { return stop_requested_; })) return;
    lock.unlock();
    // A metric reader failing must not end the thread (nor the process: an escaping exception
    // would call std::terminate); the next period simply tries again.
    try {
      task_();
    } catch (...) {
    }
    lock.lock();
    next_run += period_;
    const auto now = std::chrono::steady_clock::now();
    if (next_run < now) next_run = now + period_;
  }
}

}  // namespace phalanx::monitor
