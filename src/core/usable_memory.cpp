#include "phalanx/core/usable_memory.hpp"

#include <unistd.h>

#include <algorithm>

#include "phalanx/core/cgroup_limits.hpp"

namespace phalanx {

std::optional<std::uint64_t> usable_memory_bytes() {
  const auto limit = cgroup_memory_limit();
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return limit;
  const std::uint64_t physical = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
  return std::min(physical, limit.value_or(physical));
}

}  // namespace phalanx
