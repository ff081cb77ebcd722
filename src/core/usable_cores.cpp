// usable_cores.hpp: sched_getaffinity on Linux (with a set sized for the machine, as a fixed
// cpu_set_t covers only 1024 CPUs), the machine's count elsewhere; then the cgroup's CPU quota.
#include "phalanx/core/usable_cores.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <thread>

#include "phalanx/core/cgroup_limits.hpp"

namespace phalanx {
namespace {

int affinity_cores() {
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
#ifdef CPU_ALLOC
  // The kernel refuses (EINVAL) a set smaller than its own CPU mask: grow until it fits.
  for (int cpus = std::max(1024, machine); cpus <= (1 << 20); cpus *= 2) {
    const std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> allowed(CPU_ALLOC(cpus),
                                                                   [](cpu_set_t* set) { CPU_FREE(set); });
    if (!allowed) break;
    const std::size_t bytes = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(bytes, allowed.get());
    if (sched_getaffinity(0, bytes, allowed.get()) == 0)
      return std::max(1, CPU_COUNT_S(bytes, allowed.get()));
    if (errno != EINVAL) break;
  }
#endif
  return machine;
}

}  // namespace

int usable_cores() {
  const int cores = affinity_cores();
  return std::max(1, std::min(cores, cgroup_cpu_limit().value_or(cores)));
}

int node_cores() {
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, std::min(machine, cgroup_cpu_limit().value_or(machine)));
}

}  // namespace phalanx
