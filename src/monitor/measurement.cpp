// The common time base of the monitors' samples: the steady clock, so that interval lengths and
// rates stay right when the wall clock is adjusted during a run.
#include "phalanx/monitor/measurement.hpp"

#include <chrono>

namespace phalanx::monitor {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace phalanx::monitor
