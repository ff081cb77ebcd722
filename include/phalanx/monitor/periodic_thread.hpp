// A background thread that runs one task at a fixed period until it is destroyed. The metric
// samplers use it; it waits on a condition variable so that destruction wakes it at once instead
// of waiting out the rest of a period.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace phalanx::monitor {

class PeriodicThread {
 public:
  // The first run of `task` comes one period after construction, not at once: the samplers take
  // their first reading on the constructing thread.
  PeriodicThread(std::chrono::milliseconds period, std::function<void()> task);
  ~PeriodicThread();

  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  std::chrono::milliseconds period() const { return period_; }

 private:
  void run();

  std::chrono::milliseconds period_;
  std::function<void()> task_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_requested_ = false;
  std::thread thread_;  // last: it starts after every member it reads is constructed
};

}  // namespace phalanx::monitor
