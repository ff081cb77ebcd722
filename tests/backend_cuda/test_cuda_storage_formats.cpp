// The host's bf16 and fp16 conversions of cuda_test_support.hpp, which the activation storage
// tests (test_cuda_activation_storage.cpp) use as their reference for what a GPU backend stores:
// every 2-byte pattern widens and narrows back to itself, narrowing picks the nearer neighbour
// and the even one on a tie (checked against distances taken in double, not against the same
// formula), overflow gives infinity, NaN stays NaN. Host arithmetic only: these run without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend_cuda/cuda_test_support.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::testing {
namespace {

using backend::ComputePrecision;

constexpr ComputePrecision formats[] = {ComputePrecision::BFloat16, ComputePrecision::Float16};

// Bits of the format's +infinity, of its sign, and the largest finite value's successor as a
// number: what round to nearest compares an overflowing value with (2^128 for bf16, 2^16 for fp16).
std::uint16_t infinity_bits(ComputePrecision format) {
  return format == ComputePrecision::BFloat16 ? 0x7f80 : 0x7c00;
}
double beyond_largest(ComputePrecision format) {
  return format == ComputePrecision::BFloat16 ? std::ldexp(1.0, 128) : std::ldexp(1.0, 16);
}
bool is_nan_bits(std::uint16_t bits, ComputePrecision format) {
  return (bits & 0x7fff) > infinity_bits(format);
}

// The pattern's value, with infinity standing for the number just past the largest finite one.
double extended_value(std::uint16_t bits, ComputePrecision format) {
  if ((bits & 0x7fff) == infinity_bits(format))
    return (bits & 0x8000) ? -beyond_largest(format) : beyond_largest(format);
  return float_from_storage_bits(bits, format);
}

// `narrowed` must be a nearest pattern to `value` among its neighbours of the same sign (one
// step down and up in magnitude; patterns of one sign are ordered like their magnitudes), and
// the one with an even last bit on a tie.
void expect_nearest_even(float value, std::uint16_t narrowed, ComputePrecision format) {
  ASSERT_FALSE(is_nan_bits(narrowed, format)) << value;
  const double exact = value;
  const double distance = std::fabs(exact - extended_value(narrowed, format));
  const std::uint16_t magnitude = narrowed & 0x7fff;
  for (const int step : {-1, 1}) {
    if ((step < 0 && magnitude == 0) || (step > 0 && magnitude == infinity_bits(format))) continue;
    const auto neighbour = static_cast<std::uint16_t>(narrowed + step);
    const double neighbour_distance = std::fabs(exact - extended_value(neighbour, format));
    ASSERT_LE(distance, neighbour_distance)
        << precision_name(format) << ": " << value << " narrowed to 0x" << std::hex << narrowed << ", but 0x"
        << neighbour << " is nearer";
    if (distance == neighbour_distance) {
      ASSERT_EQ(narrowed & 1, 0) << precision_name(format) << ": the tie " << value
                                 << " went to the odd pattern";
    }
  }
}

TEST(CudaStorageFormats, EveryPatternWidensAndNarrowsBack) {
  for (const ComputePrecision format : formats) {
    for (std::uint32_t pattern = 0; pattern <= 0xffff; ++pattern) {
      const auto bits = static_cast<std::uint16_t>(pattern);
      const float widened = float_from_storage_bits(bits, format);
      if (is_nan_bits(bits, format)) {
        ASSERT_TRUE(std::isnan(widened)) << std::hex << pattern;
        ASSERT_TRUE(is_nan_bits(storage_bits(widened, format), format)) << std::hex << pattern;
        continue;
      }
      ASSERT_EQ(storage_bits(widened, format), bits)
          << precision_name(format) << " 0x" << std::hex << pattern;
      ASSERT_EQ(std::signbit(widened), (bits & 0x8000) != 0) << std::hex << pattern;
    }
  }
}

// fp16's values from its definition: (1024 + significand) * 2^(exponent - 25), subnormals
// significand * 2^-24; bf16's are the top half of a float's bits.
TEST(CudaStorageFormats, HalfValuesFollowTheDefinition) {
  for (std::uint32_t pattern = 0; pattern < 0x7c00; ++pattern) {
    const auto bits = static_cast<std::uint16_t>(pattern);
    const int exponent = static_cast<int>(pattern >> 10), significand = static_cast<int>(pattern & 0x3ff);
    const double expected =
        exponent == 0 ? std::ldexp(significand, -24) : std::ldexp(1024 + significand, exponent - 25);
    ASSERT_EQ(static_cast<double>(float_from_half_bits(bits)), expected) << std::hex << pattern;
    ASSERT_EQ(static_cast<double>(float_from_half_bits(static_cast<std::uint16_t>(bits | 0x8000))),
              -expected);
  }
  EXPECT_EQ(float_from_half_bits(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(float_from_half_bits(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(float_from_half_bits(0x7bff), 65504.0f);
  EXPECT_EQ(float_from_bfloat16_bits(0x3f80), 1.0f);
  EXPECT_EQ(float_from_bfloat16_bits(0xc040), -3.0f);
}

// Every halfway point between neighbouring patterns goes to the even one, and the floats just
// beside it to the nearer one; subnormal fp16 and the overflow threshold included.
TEST(CudaStorageFormats, TiesRoundToEven) {
  for (const ComputePrecision format : formats) {
    for (std::uint32_t pattern = 0; pattern < infinity_bits(format); ++pattern) {
      const auto low = static_cast<std::uint16_t>(pattern);
      const double middle = (extended_value(low, format) + extended_value(low + 1, format)) / 2;
      const auto tie = static_cast<float>(middle);
      ASSERT_EQ(static_cast<double>(tie), middle) << "the midpoint is a float";
      ASSERT_EQ(storage_bits(tie, format), (low & 1) ? low + 1 : low)
          << precision_name(format) << " " << middle;
      ASSERT_EQ(storage_bits(-tie, format), ((low & 1) ? low + 1 : low) | 0x8000);
      ASSERT_EQ(storage_bits(std::nextafter(tie, 0.0f), format), low);
      ASSERT_EQ(storage_bits(std::nextafter(tie, INFINITY), format), low + 1);
    }
  }
  EXPECT_EQ(half_bits_from_float(65519.99f), 0x7bff);
  EXPECT_EQ(half_bits_from_float(65520.0f), 0x7c00);
  EXPECT_EQ(bfloat16_bits_from_float(std::numeric_limits<float>::max()), 0x7f80);
}

// Random floats over the whole range and over each format's own range: always a nearest pattern.
TEST(CudaStorageFormats, NarrowingGivesANearestPattern) {
  RandomStream random(20240611, 60);
  for (int sample = 0; sample < 400000; ++sample) {
    const std::uint32_t word = random.next_u32();
    // Half of the samples keep the exponent within fp16's normal and subnormal range.
    const std::uint32_t bits = sample % 2 ? word : (word & 0x807fffffu) | ((98u + (word >> 24) % 48u) << 23);
    const float value = std::bit_cast<float>(bits);
    if (std::isnan(value)) continue;
    for (const ComputePrecision format : formats)
      expect_nearest_even(value, storage_bits(value, format), format);
  }
}

TEST(CudaStorageFormats, NanStaysNanAndInfinityStaysInfinity) {
  for (const std::uint32_t bits :
       {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7f80ffffu, 0xff800100u, 0x7fffffffu}) {
    const float nan = std::bit_cast<float>(bits);
    for (const ComputePrecision format : formats) {
      EXPECT_TRUE(std::isnan(rounded_to_storage(nan, format)))
          << precision_name(format) << " 0x" << std::hex << bits;
    }
  }
  for (const ComputePrecision format : formats) {
    EXPECT_EQ(rounded_to_storage(INFINITY, format), INFINITY);
    EXPECT_EQ(rounded_to_storage(-INFINITY, format), -INFINITY);
    EXPECT_TRUE(std::signbit(rounded_to_storage(-0.0f, format)));
    EXPECT_EQ(rounded_to_storage(1.0f, format), 1.0f);
  }
  EXPECT_EQ(rounded_to_storage(0.1f, ComputePrecision::Float32), 0.1f);
}

}  // namespace
}  // namespace phalanx::testing
