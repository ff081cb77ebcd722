#include "phalanx/core/physical_memory.hpp"

#include <unistd.h>

namespace phalanx {

std::optional<std::uint64_t> physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return std::nullopt;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

}  // namespace phalanx
