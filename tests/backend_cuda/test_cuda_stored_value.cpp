// The roundings the kernels apply to activations held in bf16/fp16 (stored_value.hpp, compiled for
// host and device), checked on the host, so they run on every machine that builds the CUDA backend:
// bf16 against an independent round-to-nearest-even on the float's bits, fp16 against values
// worked out by hand, and both back to float exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "phalanx/core/random.hpp"
#include "stored_value.hpp"

namespace phalanx::testing {
namespace {

using backend::cuda::narrow;
using backend::cuda::widen;

std::uint32_t float_bits(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float bits_float(std::uint32_t bits) {
  float value = 0;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

template <typename Narrow>
std::uint16_t narrow_bits(float value) {
  const Narrow narrowed = narrow<Narrow>(value);
  std::uint16_t bits = 0;
  std::memcpy(&bits, &narrowed, sizeof(bits));
  return bits;
}

// bf16 is the top half of the float: round the dropped half to nearest, ties to the even top half.
std::uint16_t reference_bfloat16_bits(float value) {
  const std::uint32_t bits = float_bits(value);
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

TEST(CudaStoredValue, BFloat16RoundsToNearestEvenLikeTheBitRule) {
  RandomStream random(20241130, 1);
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    const float value = bits_float(random.next_u32());
    if (std::isnan(value) || std::isinf(value)) continue;
    // Finite values whose rounding overflows go to infinity in both.
    ASSERT_EQ(narrow_bits<__nv_bfloat16>(value), reference_bfloat16_bits(value)) << value;
    ++checked;
  }
  EXPECT_GT(checked, 190000);
  // Ties: exactly halfway goes to the even neighbour, either way.
  EXPECT_EQ(narrow_bits<__nv_bfloat16>(bits_float(0x3F808000u)), 0x3F80u);  // 1 + 2^-8: down to 1
  EXPECT_EQ(narrow_bits<__nv_bfloat16>(bits_float(0x3F818000u)), 0x3F82u);  // 1 + 3 * 2^-8: up
  EXPECT_EQ(narrow_bits<__nv_bfloat16>(-0.0f), 0x8000u);
  EXPECT_TRUE(std::isnan(widen(narrow<__nv_bfloat16>(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(widen(narrow<__nv_bfloat16>(std::numeric_limits<float>::infinity())),
            std::numeric_limits<float>::infinity());
}

TEST(CudaStoredValue, Float16RoundsToNearestEvenAndSaturatesToInfinity) {
  EXPECT_EQ(narrow_bits<__half>(1.0f), 0x3C00u);
  EXPECT_EQ(narrow_bits<__half>(65504.0f), 0x7BFFu);                          // the largest finite fp16
  EXPECT_EQ(narrow_bits<__half>(65520.0f), 0x7C00u);                          // halfway to 65536: infinity
  EXPECT_EQ(narrow_bits<__half>(1.0f + std::ldexp(1.0f, -11)), 0x3C00u);      // tie: down to even 1
  EXPECT_EQ(narrow_bits<__half>(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02u);  // tie: up to even
  EXPECT_EQ(narrow_bits<__half>(std::ldexp(1.0f, -24)), 0x0001u);             // the smallest subnormal
  EXPECT_EQ(narrow_bits<__half>(std::ldexp(1.0f, -26)), 0x0000u);             // below half of it: zero
  EXPECT_EQ(narrow_bits<__half>(-2.5f), 0xC100u);
  EXPECT_TRUE(std::isnan(widen(narrow<__half>(std::numeric_limits<float>::quiet_NaN()))));
}

// Every value of the narrow type comes back from float unchanged: widening is exact, and narrowing
// a representable value does not move it.
TEST(CudaStoredValue, WideningIsExactAndNarrowingKeepsRepresentableValues) {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto half_bits = static_cast<std::uint16_t>(bits);
    __nv_bfloat16_raw brain_raw;
    brain_raw.x = half_bits;
    __half_raw half_raw;
    half_raw.x = half_bits;
    const __nv_bfloat16 brain(brain_raw);
    const __half half(half_raw);
    const float brain_value = widen(brain), half_value = widen(half);
    if (!std::isnan(brain_value)) {
      ASSERT_EQ(float_bits(brain_value), bits << 16);
      ASSERT_EQ(narrow_bits<__nv_bfloat16>(brain_value), half_bits);
    }
    if (!std::isnan(half_value)) {
      ASSERT_EQ(narrow_bits<__half>(half_value), half_bits) << bits;
    }
  }
}

}  // namespace
}  // namespace phalanx::testing
