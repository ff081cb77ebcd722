// IndexPermutation: a bijection on [0, N) for every N tried (1, 2, primes, powers of two and their
// neighbours), inverse undoes it, positions of N = 10^10 stay in range, it changes with the key,
// and it is well mixed: fixed points, successors and the value at each position are as a random
// permutation has them, by margins that the identity, a rotation or a reversal fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/data/index_permutation.hpp"

namespace phalanx::data {
namespace {

TEST(IndexPermutation, IsABijectionForManySizes) {
  const std::vector<std::int64_t> sizes = {
      1,   2,   3,   4,   5,   7,    8,    9,    13,   15,   16,   17,   31,    32,    33,    97,    127,
      128, 129, 255, 256, 257, 1000, 1021, 1023, 1024, 1025, 4093, 4096, 65535, 65536, 65537, 100003};
  for (const std::int64_t size : sizes) {
    for (std::uint64_t key = 0; key < 4; ++key) {
      const IndexPermutation permutation(size, key * 0x9e3779b97f4a7c15ull + 1);
      ASSERT_EQ(permutation.size(), size);
      std::vector<char> seen(static_cast<std::size_t>(size), 0);
      for (std::int64_t position = 0; position < size; ++position) {
        const std::int64_t value = permutation(position);
        ASSERT_GE(value, 0) << "size " << size;
        ASSERT_LT(value, size) << "size " << size;
        ASSERT_EQ(seen[static_cast<std::size_t>(value)], 0) << "value " << value << " twice, size " << size;
        seen[static_cast<std::size_t>(value)] = 1;
        ASSERT_EQ(permutation.inverse(value), position) << "size " << size;
      }
    }
  }
}

TEST(IndexPermutation, HugeSizesStayInRangeAndInvert) {
  for (const std::int64_t size :
       {std::int64_t{10'000'000'000}, (std::int64_t{1} << 40) + 1, (std::int64_t{1} << 62) - 57}) {
    const IndexPermutation permutation(size, 42);
    std::set<std::int64_t> values;
    for (std::int64_t sample = 0; sample < 20000; ++sample) {
      // Positions spread over the whole range, ends included.
      const std::int64_t position = sample == 0 ? size - 1 : (size / 20000) * sample + sample % 7;
      const std::int64_t value = permutation(position);
      ASSERT_GE(value, 0);
      ASSERT_LT(value, size);
      ASSERT_EQ(permutation.inverse(value), position);
      values.insert(value);
    }
    EXPECT_EQ(values.size(), 20000u);
    // Values spread over the range, not clustered near the positions or the low end.
    std::int64_t upper_half = 0;
    for (const std::int64_t value : values) upper_half += value >= size / 2;
    EXPECT_NEAR(static_cast<double>(upper_half), 10000.0, 500.0);
  }
}

TEST(IndexPermutation, DiffersAcrossKeys) {
  for (const std::int64_t size : {2, 3, 10, 1000}) {
    std::set<std::vector<std::int64_t>> distinct;
    for (std::uint64_t key = 0; key < 64; ++key) {
      const IndexPermutation permutation(size, key);
      std::vector<std::int64_t> values;
      for (std::int64_t position = 0; position < size; ++position) values.push_back(permutation(position));
      distinct.insert(values);
    }
    // 2! = 2 and 3! = 6 orders exist: all of them should turn up in 64 keys.
    const std::size_t expected = size == 2 ? 2u : size == 3 ? 6u : 64u;
    EXPECT_EQ(distinct.size(), expected) << "size " << size;
  }
}

// Over many keys, statistics of a random permutation of `size`; `order(key, position)` is the
// permutation under test, so the same checks can be shown to fail on bad ones.
struct Mixing {
  double fixed_points_per_permutation = 0;  // 1 for a random permutation
  double successors_per_permutation = 0;    // value(p+1) == value(p)+1: about 1 for a random one
  double position_chi_square = 0;           // value at position: (size-1)^2 degrees of freedom
  double rank_correlation = 0;              // mean Spearman correlation of position and value
};

template <typename Order>
Mixing measure(std::int64_t size, int keys, Order order) {
  Mixing mixing;
  std::vector<double> counts(static_cast<std::size_t>(size * size), 0);
  const double mean = (static_cast<double>(size) - 1) / 2;
  for (int key = 0; key < keys; ++key) {
    double covariance = 0, variance = 0;
    std::int64_t previous = -2;
    for (std::int64_t position = 0; position < size; ++position) {
      const std::int64_t value = order(static_cast<std::uint64_t>(key), position);
      mixing.fixed_points_per_permutation += value == position;
      mixing.successors_per_permutation += value == previous + 1;
      previous = value;
      counts[static_cast<std::size_t>(position * size + value)] += 1;
      covariance += (static_cast<double>(position) - mean) * (static_cast<double>(value) - mean);
      variance += (static_cast<double>(position) - mean) * (static_cast<double>(position) - mean);
    }
    mixing.rank_correlation += covariance / variance;
  }
  mixing.fixed_points_per_permutation /= keys;
  mixing.successors_per_permutation /= keys;
  mixing.rank_correlation /= keys;
  const double expected = static_cast<double>(keys) / static_cast<double>(size);
  for (const double count : counts)
    mixing.position_chi_square += (count - expected) * (count - expected) / expected;
  return mixing;
}

// Passes a random permutation of 64 over 4000 keys, by margins of several standard deviations.
bool well_mixed(const Mixing& mixing) {
  const double degrees = 63.0 * 63.0;  // chi-square mean; standard deviation sqrt(2 * degrees) = 89
  return std::abs(mixing.fixed_points_per_permutation - 1.0) < 0.1 &&  // sd 1/sqrt(4000) = 0.016
         std::abs(mixing.successors_per_permutation - 1.0) < 0.1 &&
         mixing.position_chi_square < degrees + 6 * std::sqrt(2 * degrees) &&
         std::abs(mixing.rank_correlation) < 0.01;  // sd 1/sqrt(63 * 4000) = 0.002
}

TEST(IndexPermutation, IsWellMixed) {
  constexpr std::int64_t size = 64;
  constexpr int keys = 4000;
  const Mixing feistel = measure(size, keys, [](std::uint64_t key, std::int64_t position) {
    return IndexPermutation(size, key)(position);
  });
  EXPECT_TRUE(well_mixed(feistel)) << "fixed points " << feistel.fixed_points_per_permutation
                                   << ", successors " << feistel.successors_per_permutation << ", chi-square "
                                   << feistel.position_chi_square << ", correlation "
                                   << feistel.rank_correlation;
  // Cycle-walking on a domain twice the size, as for N = 2^k + 1.
  const Mixing walked = measure(
      65, keys, [](std::uint64_t key, std::int64_t position) { return IndexPermutation(65, key)(position); });
  EXPECT_NEAR(walked.fixed_points_per_permutation, 1.0, 0.1);
  EXPECT_NEAR(walked.successors_per_permutation, 1.0, 0.1);
  EXPECT_NEAR(walked.rank_correlation, 0.0, 0.01);

  // The same checks refuse orders that are not shuffles.
  EXPECT_FALSE(
      well_mixed(measure(size, keys, [](std::uint64_t, std::int64_t position) { return position; })));
  EXPECT_FALSE(well_mixed(measure(size, keys, [](std::uint64_t key, std::int64_t position) {
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(position) + key) %
                                     size);  // a random rotation
  })));
  EXPECT_FALSE(well_mixed(measure(size, keys, [](std::uint64_t key, std::int64_t position) {
    return key % 2 ? size - 1 - position : static_cast<std::int64_t>((position + 7) % size);
  })));
}

TEST(IndexPermutation, RejectsOutOfRangeArguments) {
  EXPECT_THROW(IndexPermutation(0, 1), Error);
  const IndexPermutation permutation(10, 1);
  EXPECT_THROW(permutation(10), Error);
  EXPECT_THROW(permutation(-1), Error);
  EXPECT_THROW(permutation.inverse(10), Error);
}

}  // namespace
}  // namespace phalanx::data
