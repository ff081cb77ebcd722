// The memory this process may use, for budgets (the data cache) and for refusing what cannot fit
// (a checkpoint's tensor of terabytes): the machine's physical memory, or less where a control
// group limits it (Slurm's --mem, a container's --memory), since the kernel kills a job at its
// group's limit whatever the machine has.
#pragma once

#include <cstdint>
#include <optional>

namespace phalanx {

// Bytes of physical memory, capped by this process's cgroup memory limit; nullopt where the
// system does not say.
std::optional<std::uint64_t> usable_memory_bytes();

}  // namespace phalanx
