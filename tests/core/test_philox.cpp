// Philox-4x32-10 against the known-answer vectors of its authors' Random123 library, at compile
// time (the constexpr evaluation CUDA kernels rely on) and at run time, and RandomStream as the
// run of its blocks: the words every CPU and GPU random draw of training is made from.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "phalanx/core/philox.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::testing {
namespace {

using Words = std::array<std::uint32_t, 4>;

struct KnownAnswer {
  std::uint64_t key, counter_high, counter_low;
  Words words;
};

// Random123's kat_vectors for philox4x32_10, counter {c0, c1, c2, c3} and key {k0, k1} packed as
// counter_low = c1:c0, counter_high = c3:c2, key = k1:k0.
constexpr std::uint64_t all_ones = ~std::uint64_t{0};
constexpr std::array<KnownAnswer, 3> known_answers{{
    {0, 0, 0, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {all_ones, all_ones, all_ones, {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {0x299f31d0a4093822u,
     0x0370734413198a2eu,
     0x85a308d3243f6a88u,
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
}};

constexpr bool all_known_answers_at_compile_time() {
  for (const KnownAnswer& answer : known_answers)
    if (philox4x32(answer.key, answer.counter_high, answer.counter_low) != answer.words) return false;
  return true;
}
static_assert(all_known_answers_at_compile_time(), "Philox-4x32-10 differs from Random123's known answers");

TEST(Philox, KnownAnswersAtRunTime) {
  // Through a volatile copy, so the compiler cannot fold the calls into constants.
  for (const KnownAnswer& answer : known_answers) {
    volatile std::uint64_t key = answer.key, counter_high = answer.counter_high,
                           counter_low = answer.counter_low;
    EXPECT_EQ(philox4x32(key, counter_high, counter_low), answer.words) << "key " << answer.key;
  }
}

TEST(Philox, EveryInputBitMovesTheWords) {
  const Words base = philox4x32(20240611, 7, 12345);
  for (int bit = 0; bit < 64; ++bit) {
    const std::uint64_t flip = std::uint64_t{1} << bit;
    EXPECT_NE(philox4x32(20240611 ^ flip, 7, 12345), base) << "key bit " << bit;
    EXPECT_NE(philox4x32(20240611, 7 ^ flip, 12345), base) << "counter_high bit " << bit;
    EXPECT_NE(philox4x32(20240611, 7, 12345 ^ flip), base) << "counter_low bit " << bit;
  }
}

// Stream s of seed k draws the words of blocks (k, s, 0), (k, s, 1), ... in order: the mapping the
// CPU and GPU dropout masks (block i / 4, word i % 4) and the data augmentation draws share.
TEST(Philox, RandomStreamDrawsTheBlocksInOrder) {
  constexpr std::uint64_t seed = 99, stream = 3;
  RandomStream random(seed, stream);
  for (std::uint64_t block = 0; block < 5; ++block) {
    const Words words = philox4x32(seed, stream, block);
    for (const std::uint32_t word : words) EXPECT_EQ(random.next_u32(), word) << "block " << block;
  }
}

}  // namespace
}  // namespace phalanx::testing
