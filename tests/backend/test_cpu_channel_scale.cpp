// The CPU backend's channel_scale (squeeze-and-excitation's gate) and scale_samples (stochastic
// depth): values against double references, gradients against central differences, in place,
// without an input gradient, and in bf16 storage against the fp32 op rounded once.
#include <gtest/gtest.h>

#include <cstring>

#include "backend_test_support.hpp"

namespace phalanx::testing {
namespace {

constexpr std::int64_t batch = 3, spatial = 5 * 7, channels = 19;  // channels not a SIMD width

std::vector<double> reference_forward(const std::vector<float>& input, const std::vector<float>& scale) {
  std::vector<double> output(input.size());
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t p = 0; p < spatial; ++p)
      for (std::int64_t c = 0; c < channels; ++c) {
        const std::size_t index = static_cast<std::size_t>((n * spatial + p) * channels + c);
        // The double product of two floats is exact; rounded to float it is the float product.
        output[index] = static_cast<float>(static_cast<double>(input[index]) *
                                           scale[static_cast<std::size_t>(n * channels + c)]);
      }
  return output;
}

TEST(CpuChannelScale, ForwardMultipliesEachSampleAndChannel) {
  auto backend = make_test_backend();
  const std::vector<float> input = random_values(batch * spatial * channels, 1);
  const std::vector<float> scale = random_values(batch * channels, 2, 0.0f, 1.0f);
  std::vector<float> output(input.size(), NAN);
  backend->channel_scale_forward(batch, spatial, channels, input.data(), scale.data(), output.data());
  EXPECT_EQ(max_error(output, reference_forward(input, scale)), 0.0);
  // In place gives the same bits.
  std::vector<float> in_place = input;
  backend->channel_scale_forward(batch, spatial, channels, in_place.data(), scale.data(), in_place.data());
  EXPECT_EQ(std::memcmp(in_place.data(), output.data(), output.size() * sizeof(float)), 0);
}

TEST(CpuChannelScale, BackwardMatchesCentralDifferences) {
  auto backend = make_test_backend();
  std::vector<float> input = random_values(batch * spatial * channels, 3);
  std::vector<float> scale = random_values(batch * channels, 4, 0.0f, 1.0f);
  const std::vector<float> weights = random_values(input.size(), 5);  // d(objective)/d(output)
  std::vector<float> grad_input(input.size(), NAN), grad_scale(scale.size(), NAN);
  backend->channel_scale_backward(batch, spatial, channels, input.data(), scale.data(), weights.data(),
                                  grad_input.data(), grad_scale.data());
  const auto objective = [&] {
    std::vector<float> output(input.size());
    backend->channel_scale_forward(batch, spatial, channels, input.data(), scale.data(), output.data());
    return weighted_sum(output, weights);
  };
  EXPECT_LT(gradient_check_error(input, grad_input, objective, 1e-2f), 1e-3);
  EXPECT_LT(gradient_check_error(scale, grad_scale, objective, 1e-2f), 1e-3);
  // Without an input gradient the scale's gradient is the same.
  std::vector<float> grad_scale_alone(scale.size(), NAN);
  backend->channel_scale_backward(batch, spatial, channels, input.data(), scale.data(), weights.data(),
                                  nullptr, grad_scale_alone.data());
  EXPECT_EQ(std::memcmp(grad_scale_alone.data(), grad_scale.data(), scale.size() * sizeof(float)), 0);
}

TEST(CpuScaleSamples, KeepsAndScalesOrZeroesWholeSamples) {
  auto backend = make_test_backend();
  constexpr std::int64_t samples = 4, elements = 1001;
  const std::vector<float> input = random_values(samples * elements, 6);
  const std::vector<std::uint8_t> keep = {1, 0, 0, 1};
  std::vector<float> output(input.size(), NAN);
  backend->scale_samples(samples, elements, keep.data(), 1.25f, input.data(), output.data());
  for (std::int64_t n = 0; n < samples; ++n)
    for (std::int64_t i = 0; i < elements; ++i) {
      const std::size_t index = static_cast<std::size_t>(n * elements + i);
      ASSERT_EQ(output[index], keep[n] ? input[index] * 1.25f : 0.0f) << "sample " << n << " element " << i;
    }
  std::vector<float> in_place = input;
  backend->scale_samples(samples, elements, keep.data(), 1.25f, in_place.data(), in_place.data());
  EXPECT_EQ(std::memcmp(in_place.data(), output.data(), output.size() * sizeof(float)), 0);
}

// bf16 storage: 2-byte elements in the first half of the buffers.
std::uint16_t bf16_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
float from_bf16(std::uint16_t stored) {
  const std::uint32_t bits = static_cast<std::uint32_t>(stored) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
std::vector<float> stored_bf16(const std::vector<float>& values) {
  std::vector<float> buffer(values.size(), 0.0f);
  auto* stored = reinterpret_cast<std::uint16_t*>(buffer.data());
  for (std::size_t i = 0; i < values.size(); ++i) stored[i] = bf16_bits(values[i]);
  return buffer;
}
std::vector<float> read_bf16(const std::vector<float>& buffer, std::size_t count) {
  std::vector<float> values(count);
  const auto* stored = reinterpret_cast<const std::uint16_t*>(buffer.data());
  for (std::size_t i = 0; i < count; ++i) values[i] = from_bf16(stored[i]);
  return values;
}
std::vector<float> rounded(std::vector<float> values) {
  for (float& value : values) value = from_bf16(bf16_bits(value));
  return values;
}

TEST(CpuChannelScale, Bf16StorageRoundsTheFp32ResultsOnce) {
  auto backend = make_test_backend();
  using backend::ComputePrecision;
  const std::string refusal =
      backend->activation_precision_refusal(ComputePrecision::BFloat16, ComputePrecision::BFloat16);
  if (!refusal.empty()) GTEST_SKIP() << "this CPU holds no bf16 activations: " << refusal;
  const std::vector<float> input = rounded(random_values(batch * spatial * channels, 7));
  const std::vector<float> scale = rounded(random_values(batch * channels, 8, 0.0f, 1.0f));
  const std::vector<float> grad_output = rounded(random_values(input.size(), 9));
  std::vector<float> output(input.size()), grad_input(input.size()), grad_scale(scale.size());
  backend->channel_scale_forward(batch, spatial, channels, input.data(), scale.data(), output.data());
  backend->channel_scale_backward(batch, spatial, channels, input.data(), scale.data(), grad_output.data(),
                                  grad_input.data(), grad_scale.data());
  std::vector<float> keep_scaled(input.size());
  const std::vector<std::uint8_t> keep = {0, 1, 1};
  backend->scale_samples(batch, spatial * channels, keep.data(), 1.25f, input.data(), keep_scaled.data());

  backend->set_compute_precision(ComputePrecision::BFloat16);
  backend->set_activation_precision(ComputePrecision::BFloat16);
  const std::vector<float> input_bf16 = stored_bf16(input), scale_bf16 = stored_bf16(scale),
                           grad_output_bf16 = stored_bf16(grad_output);
  std::vector<float> output_bf16(input.size()), grad_input_bf16(input.size()), grad_scale_bf16(scale.size()),
      keep_scaled_bf16(input.size());
  backend->channel_scale_forward(batch, spatial, channels, input_bf16.data(), scale_bf16.data(),
                                 output_bf16.data());
  backend->channel_scale_backward(batch, spatial, channels, input_bf16.data(), scale_bf16.data(),
                                  grad_output_bf16.data(), grad_input_bf16.data(), grad_scale_bf16.data());
  backend->scale_samples(batch, spatial * channels, keep.data(), 1.25f, input_bf16.data(),
                         keep_scaled_bf16.data());
  backend->set_activation_precision(ComputePrecision::Float32);
  backend->set_compute_precision(ComputePrecision::Float32);
  // The same float arithmetic on the same values, rounded once on the way out.
  EXPECT_EQ(read_bf16(output_bf16, input.size()), rounded(output));
  EXPECT_EQ(read_bf16(grad_input_bf16, input.size()), rounded(grad_input));
  EXPECT_EQ(read_bf16(grad_scale_bf16, scale.size()), rounded(grad_scale));
  EXPECT_EQ(read_bf16(keep_scaled_bf16, input.size()), rounded(keep_scaled));
}

}  // namespace
}  // namespace phalanx::testing
