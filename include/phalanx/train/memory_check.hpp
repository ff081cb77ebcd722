// The memory check before training: a CPU rank whose activations cannot fit in the memory it may
// still use stops at start, naming train.batch_size and what it would take, instead of failing an
// allocation in its first step or being killed by the kernel's out-of-memory killer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "phalanx/backend/backend.hpp"
#include "phalanx/nn/model.hpp"

namespace phalanx::train {

// What a rank may still allocate, and where the bound comes from ("MemAvailable ..." for a CPU
// rank, the GPU's free memory for a GPU rank).
struct MemoryLimit {
  std::size_t bytes = 0;
  std::string source;
};

// The tightest of: the node's MemAvailable shared by `ranks_on_node`, the cgroup's memory.max less
// its memory.current (shared likewise), the address-space limit (ulimit -v) less what this process
// maps. Empty when nothing bounds it, and on GPU ranks (their allocations fail cleanly instead).
std::optional<MemoryLimit> memory_available_to_rank(backend::Backend& backend, int ranks_on_node);

// Bytes the activations of one training step need at `micro_batch` samples (forward outputs,
// gradients, the normalised input, logits) and the loader's ring of `prefetch_batches` raw batches.
std::size_t step_activation_bytes(const nn::Model& model, std::int64_t micro_batch, std::int64_t local_batch,
                                  int prefetch_batches);

// Throws an input error naming train.batch_size when `needed` exceeds the limit.
void require_memory_fits(std::size_t needed, const std::optional<MemoryLimit>& limit,
                         std::int64_t local_batch, int micro_batches, const std::string& device);

}  // namespace phalanx::train
