// The machine's physical memory, for budgets (the data cache) and for refusing what cannot fit
// (a checkpoint's tensor of terabytes).
#pragma once

#include <cstdint>
#include <optional>

namespace phalanx {

// Bytes of physical memory; nullopt where the system does not say.
std::optional<std::uint64_t> physical_memory_bytes();

}  // namespace phalanx
