// usable_cores.hpp: sched_getaffinity on Linux, the machine's count elsewhere.
#include "phalanx/core/usable_cores.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace phalanx {

int usable_cores() {
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
#ifdef CPU_COUNT
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) return std::max(1, CPU_COUNT(&allowed));
#endif
  return machine;
}

}  // namespace phalanx
