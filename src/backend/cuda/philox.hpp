// Philox-4x32-10 for the host and the device, the generator of core/random.cpp restated so that
// device code can call it (core's phalanx::philox4x32 is host code). Integer arithmetic only: the
// words are bitwise those of the host generator, which a host test checks, so a dropout mask drawn
// on the GPU is the CPU backend's mask.
#pragma once

#include <cmath>
#include <cstdint>

#include "host_device.hpp"

namespace phalanx::backend::cuda {

struct PhiloxBlock {
  std::uint32_t word[4];
};

// The high 32 bits of the 64-bit product.
PHALANX_HOST_DEVICE inline std::uint32_t multiply_high(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(a) * b) >> 32);
#endif
}

// Key (seed), counter (counter_low, counter_high), as core/random.cpp has it.
PHALANX_HOST_DEVICE inline PhiloxBlock philox4x32(std::uint64_t key, std::uint64_t counter_high,
                                                  std::uint64_t counter_low) {
  constexpr std::uint32_t multiplier0 = 0xD2511F53u, multiplier1 = 0xCD9E8D57u;
  constexpr std::uint32_t weyl0 = 0x9E3779B9u, weyl1 = 0xBB67AE85u;
  std::uint32_t key0 = static_cast<std::uint32_t>(key), key1 = static_cast<std::uint32_t>(key >> 32);
  std::uint32_t c0 = static_cast<std::uint32_t>(counter_low),
                c1 = static_cast<std::uint32_t>(counter_low >> 32);
  std::uint32_t c2 = static_cast<std::uint32_t>(counter_high),
                c3 = static_cast<std::uint32_t>(counter_high >> 32);
#if defined(__CUDA_ARCH__)
#pragma unroll  // host compilers warn about the pragma; they unroll the loop on their own
#endif
  for (int round = 0; round < 10; ++round) {
    const std::uint32_t high0 = multiply_high(multiplier0, c0), low0 = multiplier0 * c0;
    const std::uint32_t high1 = multiply_high(multiplier1, c2), low1 = multiplier1 * c2;
    const std::uint32_t next0 = high1 ^ c1 ^ key0;
    const std::uint32_t next2 = high0 ^ c3 ^ key1;
    c1 = low1;
    c3 = low0;
    c0 = next0;
    c2 = next2;
    key0 += weyl0;
    key1 += weyl1;
  }
  return {{c0, c1, c2, c3}};
}

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
