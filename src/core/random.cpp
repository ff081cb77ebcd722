// RandomStream over Philox-4x32-10 (phalanx/core/philox.hpp, which the CUDA backend's kernels call
// too), and the seed mixing and name hashing that derive its streams.
#include "phalanx/core/random.hpp"

namespace phalanx {

std::uint32_t RandomStream::next_u32() {
  if (used_ == 4) {
    block_ = philox4x32(seed_, stream_, counter_++);
    used_ = 0;
  }
  return block_[used_++];
}

float RandomStream::next_uniform() {
  // 24 random bits give every float in [0,1) with spacing 2^-24, never 1.0.
  return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f);
}

std::uint64_t RandomStream::next_below(std::uint64_t bound) {
  // Rejection sampling removes modulo bias.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  while (true) {
    // Two statements: the operands of | are unordered, and the high word must be the first draw
    // on every compiler for the same seed to give the same order.
    const std::uint64_t high = next_u32();
    const std::uint64_t value = (high << 32) | next_u32();
    if (value < limit) return value % bound;
  }
}

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = a + 0x9E3779B97F4A7C15ull * (b + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t fnv1a_hash(std::string_view bytes) {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a 64-bit offset basis
  for (const unsigned char byte : bytes) hash = (hash ^ byte) * 1099511628211ull;
  return hash;
}

}  // namespace phalanx
