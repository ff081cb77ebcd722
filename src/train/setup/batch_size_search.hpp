// Auto batch size (train.batch_size: auto): the largest per-rank batch whose training step fits
// the GPU's memory with headroom, found by running real steps of the configured model at growing
// batch sizes. Every rank searches on its own device; the job takes the smallest answer, so all
// ranks train with the same batch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::train {

struct BatchSizeChoice {
  int batch_size = 0;
  std::size_t used_bytes = 0;   // device memory in use after a step at that batch
  std::size_t total_bytes = 0;  // the device's memory
  int probes = 0;               // steps tried
};

// Fraction of the device's memory a chosen batch may use after its step: the rest is headroom for
// what a probe does not see (allocator fragmentation, the evaluation batch, NCCL buffers).
constexpr double batch_size_memory_fraction = 0.85;

// Searches batch sizes 2^k up to the training split's samples per rank (`world_size` ranks), then
// bisects between the last that fitted and the first that did not. InvalidInput when `backend` has
// no device memory to measure (CPU ranks), the split is missing, or not even a batch of 1 fits.
BatchSizeChoice find_batch_size(const config::Config& config, backend::Backend& backend, int world_size);

}  // namespace phalanx::train
