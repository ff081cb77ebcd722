// Steady-clock timing for the per-stage breakdown of a step.
#pragma once

#include <chrono>

namespace phalanx {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void restart() { start_ = std::chrono::steady_clock::now(); }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

double wall_seconds_since_epoch();
// Seconds on the steady clock (CLOCK_MONOTONIC): the time base of the trace's events.
double steady_seconds();

}  // namespace phalanx
