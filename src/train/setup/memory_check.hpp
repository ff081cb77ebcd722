// The memory checks before training: a CPU rank whose model (weights, gradients, optimizer state)
// or whose activations cannot fit in the memory it may still use stops at start, naming the config
// key and what it would take, instead of failing an allocation or being killed by the kernel's
// out-of-memory killer.
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

// What one training step allocates beyond the model's state: the activations at `micro_batch`
// samples (forward outputs, gradients, the normalised input, logits) and the loader's ring of
// `prefetch_batches` raw batches. `gathered_sample_bytes`: the bytes of one stored image when the
// loader gathers a batch of them before cropping (data.augment.random_resized_crop), else 0.
struct StepMemory {
  std::size_t activations = 0, loader_ring = 0;
  std::size_t raw_batch = 0;  // one raw batch of the ring: what each prefetched batch adds
  int prefetch_batches = 0;
  std::size_t total() const { return activations + loader_ring; }
};
StepMemory step_memory(const nn::Model& model, std::int64_t micro_batch, std::int64_t local_batch,
                       int prefetch_batches, std::int64_t gathered_sample_bytes = 0);

// Bytes of a model's fp32 weights, their gradients, its buffers (batch-norm statistics) and
// `optimizer_states` optimizer buffers of the weights' size: what stays allocated for the run.
// (While the model is built its initial weights pass through one host copy, before the optimizer
// exists: no more than this with at least one optimizer buffer, as sgd and adamw keep.)
std::size_t model_state_bytes(const nn::ModelSize& size, std::size_t optimizer_states);

// Throws an input error naming `model_key` (model.layers or model.preset) when `needed`
// (model_state_bytes) exceeds the limit; `optimizer` names optimizer.type and its state.
void require_model_state_fits(std::size_t needed, const std::optional<MemoryLimit>& limit,
                              const nn::ModelSize& size, const std::string& model_key,
                              const std::string& optimizer, const std::string& device);

// Throws an input error when `needed` exceeds the limit, naming what takes the most of it:
// train.batch_size (the activations) or data.prefetch_batches (the loader's ring).
void require_memory_fits(const StepMemory& needed, const std::optional<MemoryLimit>& limit,
                         std::int64_t local_batch, int micro_batches, const std::string& device);

}  // namespace phalanx::train
