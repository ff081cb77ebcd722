// Counter-based random numbers (Philox-4x32-10). Every random draw in training is a pure
// function of (seed, stream, counter), so a step's randomness depends on the step number and
// not on how many draws came before: resume and N-rank runs reproduce without saving RNG state.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "phalanx/core/philox.hpp"

namespace phalanx {

// A stream of uniform numbers for one purpose (initialising one parameter, one dropout mask).
class RandomStream {
 public:
  RandomStream(std::uint64_t seed, std::uint64_t stream) : seed_(seed), stream_(stream) {}
  std::uint32_t next_u32();
  // Uniform in [0, 1).
  float next_uniform();
  // Uniform in [low, high).
  float next_uniform(float low, float high) { return low + (high - low) * next_uniform(); }
  // Uniform integer in [0, bound).
  std::uint64_t next_below(std::uint64_t bound);

 private:
  std::uint64_t seed_;
  std::uint64_t stream_;
  std::uint64_t counter_ = 0;
  std::array<std::uint32_t, 4> block_{};
  int used_ = 4;
};

// Mixes several 64-bit values into one seed (SplitMix64 finaliser), for deriving stream ids.
std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b);

// 64-bit FNV-1a of bytes: the same on every platform and compiler (unlike std::hash), so values
// derived from names (initial weights, dropout streams) and config hashes are portable.
std::uint64_t fnv1a_hash(std::string_view bytes);

}  // namespace phalanx
