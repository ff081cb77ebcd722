// Wall-clock helper for log timestamps.
#include "phalanx/core/timer.hpp"

namespace phalanx {

double wall_seconds_since_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace phalanx
