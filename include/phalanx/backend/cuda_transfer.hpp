// Host-to-device copy bandwidth from pinned (page-locked) and from pageable host memory: why the
// loader fills pinned buffers on GPU ranks (docs/DESIGN.md §1). Implemented in src/backend/cuda; a build
// without CUDA answers with a usage error, so callers need no #ifdef.
#pragma once

#include <cstddef>
#include <vector>

namespace phalanx::backend {

struct TransferResult {
  std::size_t bytes = 0;
  double pinned_seconds = 0, pageable_seconds = 0;      // medians of one copy, timed with CUDA events
  double pinned_bandwidth = 0, pageable_bandwidth = 0;  // bytes per second
};

// On CUDA device `device`: `iterations` (after 3 warm-up) cudaMemcpyAsync copies of each size
// from a pinned and from a pageable buffer into device memory. Throws phalanx::Error
// (InvalidInput) when the build or the machine has no CUDA device.
std::vector<TransferResult> measure_host_to_device(int device, const std::vector<std::size_t>& sizes,
                                                   int iterations);

}  // namespace phalanx::backend
