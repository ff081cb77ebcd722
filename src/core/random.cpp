// Philox-4x32-10 (Salmon et al., SC'11): the generator cuRAND and PyTorch use on GPUs, so the
// CUDA backend can draw the same numbers in a kernel.
#include "phalanx/core/random.hpp"

namespace phalanx {

std::array<std::uint32_t, 4> philox4x32(std::uint64_t key, std::uint64_t counter_high,
                                        std::uint64_t counter_low) {
  constexpr std::uint32_t multiplier0 = 0xD2511F53u, multiplier1 = 0xCD9E8D57u;
  constexpr std::uint32_t weyl0 = 0x9E3779B9u, weyl1 = 0xBB67AE85u;
  std::uint32_t key0 = static_cast<std::uint32_t>(key), key1 = static_cast<std::uint32_t>(key >> 32);
  std::uint32_t c0 = static_cast<std::uint32_t>(counter_low),
                c1 = static_cast<std::uint32_t>(counter_low >> 32);
  std::uint32_t c2 = static_cast<std::uint32_t>(counter_high),
                c3 = static_cast<std::uint32_t>(counter_high >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t product0 = static_cast<std::uint64_t>(multiplier0) * c0;
    const std::uint64_t product1 = static_cast<std::uint64_t>(multiplier1) * c2;
    const std::uint32_t next0 = static_cast<std::uint32_t>(product1 >> 32) ^ c1 ^ key0;
    const std::uint32_t next2 = static_cast<std::uint32_t>(product0 >> 32) ^ c3 ^ key1;
    c1 = static_cast<std::uint32_t>(product1);
    c3 = static_cast<std::uint32_t>(product0);
    c0 = next0;
    c2 = next2;
    key0 += weyl0;
    key1 += weyl1;
  }
  return {c0, c1, c2, c3};
}

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
    const std::uint64_t value = (static_cast<std::uint64_t>(next_u32()) << 32) | next_u32();
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
