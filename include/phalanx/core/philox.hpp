// Philox-4x32-10 (Salmon et al., SC'11), the counter-based generator cuRAND and PyTorch use on
// GPUs. One constexpr definition serves the host and CUDA kernels alike (nvcc compiles constexpr
// functions for the device under --expt-relaxed-constexpr), so a dropout mask drawn on a GPU is
// bitwise the CPU backend's.
#pragma once

#include <array>
#include <cstdint>

namespace phalanx {

// The high 32 bits of a 32x32-bit product, in portable arithmetic.
struct PortableMultiplyHigh {
  constexpr std::uint32_t operator()(std::uint32_t a, std::uint32_t b) const {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(a) * b) >> 32);
  }
};

// The four words of block (counter_low: words 0 and 1, counter_high: words 2 and 3) under `key`.
// A kernel passes its device's multiply-high instruction: nvcc turns the portable 64-bit product
// into 64-bit arithmetic through the whole round: 7 to 10% more instructions in the dropout kernel.
template <typename MultiplyHigh = PortableMultiplyHigh>
constexpr std::array<std::uint32_t, 4> philox4x32(std::uint64_t key, std::uint64_t counter_high,
                                                  std::uint64_t counter_low,
                                                  MultiplyHigh multiply_high = {}) {
  constexpr std::uint32_t multiplier0 = 0xD2511F53u, multiplier1 = 0xCD9E8D57u;
  constexpr std::uint32_t weyl0 = 0x9E3779B9u, weyl1 = 0xBB67AE85u;
  std::uint32_t key0 = static_cast<std::uint32_t>(key), key1 = static_cast<std::uint32_t>(key >> 32);
  std::uint32_t c0 = static_cast<std::uint32_t>(counter_low),
                c1 = static_cast<std::uint32_t>(counter_low >> 32);
  std::uint32_t c2 = static_cast<std::uint32_t>(counter_high),
                c3 = static_cast<std::uint32_t>(counter_high >> 32);
  // A fixed trip count: host compilers and nvcc unroll the rounds on their own.
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
  return {c0, c1, c2, c3};
}

}  // namespace phalanx
