// Launch geometry shared by the element-wise kernels: 256-thread blocks and a grid capped so that
// huge tensors are covered by grid-stride loops instead of millions of tiny blocks.
#pragma once

#include <algorithm>
#include <cstdint>

namespace phalanx::backend::cuda {

constexpr int threads_per_block = 256;

// Enough blocks for one element per thread, at most 8192 (a few waves on 132 SMs); callers
// launch nothing for an empty range, since a zero-block grid is an error.
inline unsigned int grid_blocks(std::int64_t count, int threads = threads_per_block) {
  const std::int64_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned int>(std::clamp<std::int64_t>(blocks, 1, 8192));
}

}  // namespace phalanx::backend::cuda
