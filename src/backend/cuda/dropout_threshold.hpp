// The integer form of dropout's keep rule, which lets a kernel compare a Philox word
// (phalanx/core/philox.hpp) with the probability without converting it to a float.
#pragma once

#include <cmath>
#include <cstdint>

namespace phalanx::backend::cuda {

// Dropout keeps element i when the top 24 bits of its word reach this threshold: uniform >= p
// with uniform = (word >> 8) / 2^24 (RandomStream::next_uniform), in integers. p >= 1 gives 2^24,
// above every 24-bit draw, so everything is dropped.
inline std::uint32_t dropout_keep_threshold(float probability) {
  if (probability >= 1.0f) return 1u << 24;
  if (probability <= 0.0f) return 0;
  // Exact in double: p * 2^24 is a float times a power of two.
  return static_cast<std::uint32_t>(std::ceil(static_cast<double>(probability) * 16777216.0));
}

}  // namespace phalanx::backend::cuda
