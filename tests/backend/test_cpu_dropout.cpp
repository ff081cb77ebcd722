// Tests of the CPU backend's inverted dropout: the mask is RandomStream(seed, stream)'s draws
// compared with p, kept values are scaled by 1/(1-p), and backward applies the stored mask.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

// The mask the contract defines: element i is kept when the i-th uniform draw of the stream is
// at least p.
std::vector<std::uint8_t> reference_mask(std::int64_t count, float probability, std::uint64_t seed,
                                         std::uint64_t stream) {
  RandomStream random(seed, stream);
  std::vector<std::uint8_t> mask(count);
  for (auto& keep : mask) keep = random.next_uniform() >= probability ? 1 : 0;
  return mask;
}

TEST(CpuDropout, ForwardScalesKeptValuesAndMatchesCounterBasedMask) {
  auto backend = make_test_backend();
  const float probability = 0.3f;
  for (const std::int64_t count : {std::int64_t{1003}, std::int64_t{200001}}) {
    const auto input = random_values(count, 1);
    std::vector<float> output(count, NAN);
    std::vector<std::uint8_t> mask(count, 7);
    backend->dropout_forward(count, probability, 42, 9, input.data(), output.data(), mask.data());
    EXPECT_EQ(mask, reference_mask(count, probability, 42, 9));
    for (std::int64_t i = 0; i < count; ++i)
      ASSERT_EQ(output[i], mask[i] ? input[i] * (1.0f / (1.0f - probability)) : 0.0f) << i;
  }
}

// Kept fraction of 200001 Bernoulli(0.7) draws: standard deviation 0.001, so +-0.006 is six
// sigma; the mean of the output estimates the mean of the input (inverted dropout).
TEST(CpuDropout, MaskStatistics) {
  auto backend = make_test_backend();
  const std::int64_t count = 200001;
  const float probability = 0.3f;
  const std::vector<float> ones(count, 1.0f);
  std::vector<float> output(count);
  std::vector<std::uint8_t> mask(count);
  backend->dropout_forward(count, probability, 1, 2, ones.data(), output.data(), mask.data());
  double kept = 0, output_sum = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    kept += mask[i];
    output_sum += output[i];
  }
  EXPECT_NEAR(kept / count, 0.7, 0.006);
  EXPECT_NEAR(output_sum / count, 1.0, 0.006 / 0.7);
  // Neighbouring elements are independent: the pair (keep, keep) occurs 0.49 of the time.
  double both = 0;
  for (std::int64_t i = 0; i + 1 < count; i += 2) both += mask[i] && mask[i + 1];
  EXPECT_NEAR(both / (count / 2), 0.49, 0.01);
}

TEST(CpuDropout, DeterministicPerSeedAndStream) {
  auto backend = make_test_backend();
  const std::int64_t count = 5000;
  const auto input = random_values(count, 3);
  std::vector<float> first(count), second(count), other_stream(count), other_seed(count);
  std::vector<std::uint8_t> mask(count);
  backend->dropout_forward(count, 0.5f, 11, 1, input.data(), first.data(), mask.data());
  backend->dropout_forward(count, 0.5f, 11, 1, input.data(), second.data(), mask.data());
  backend->dropout_forward(count, 0.5f, 11, 2, input.data(), other_stream.data(), mask.data());
  backend->dropout_forward(count, 0.5f, 12, 1, input.data(), other_seed.data(), mask.data());
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other_stream);
  EXPECT_NE(first, other_seed);
}

TEST(CpuDropout, BackwardAppliesStoredMask) {
  auto backend = make_test_backend();
  const std::int64_t count = 4099;
  const float probability = 0.25f;
  const auto input = random_values(count, 4);
  const auto grad_output = random_values(count, 5);
  std::vector<float> output(count), grad_input(count, NAN);
  std::vector<std::uint8_t> mask(count);
  backend->dropout_forward(count, probability, 5, 6, input.data(), output.data(), mask.data());
  backend->dropout_backward(count, probability, mask.data(), grad_output.data(), grad_input.data());
  for (std::int64_t i = 0; i < count; ++i)
    ASSERT_EQ(grad_input[i], mask[i] ? grad_output[i] * (1.0f / (1.0f - probability)) : 0.0f) << i;
}

TEST(CpuDropout, ProbabilityZeroKeepsAllAndOneDropsAll) {
  auto backend = make_test_backend();
  const std::int64_t count = 1000;
  const auto input = random_values(count, 7);
  std::vector<float> output(count);
  std::vector<std::uint8_t> mask(count);
  backend->dropout_forward(count, 0.0f, 1, 1, input.data(), output.data(), mask.data());
  EXPECT_EQ(output, input);
  backend->dropout_forward(count, 1.0f, 1, 1, input.data(), output.data(), mask.data());
  EXPECT_EQ(output, std::vector<float>(count, 0.0f));
  std::vector<float> grad_input(count, NAN);
  backend->dropout_backward(count, 1.0f, mask.data(), input.data(), grad_input.data());
  EXPECT_EQ(grad_input, std::vector<float>(count, 0.0f));
}

}  // namespace
}  // namespace phalanx::testing
