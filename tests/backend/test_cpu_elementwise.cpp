// Tests of the CPU backend's memory and element-wise ops (copies, fill, input normalisation,
// ReLU, sums, scaling, per-sample transpose) against double references.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

// Sizes on both sides of the backend's threshold for going parallel (32768 elements).
constexpr std::int64_t small_count = 1001;
constexpr std::int64_t large_count = 100003;

TEST(CpuBackendMemory, AllocatesAlignedAndCopies) {
  auto backend = make_test_backend();
  EXPECT_EQ(backend->device_kind(), DeviceKind::Cpu);
  EXPECT_NE(backend->name().find("oneDNN"), std::string::npos) << backend->name();
  const std::size_t bytes = 1000 * sizeof(float);
  auto* device = static_cast<float*>(backend->allocate(bytes));
  auto* other = static_cast<float*>(backend->allocate(bytes));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(device) % 64, 0u);
  const auto source = random_values(1000, 1);
  std::vector<float> back(1000, NAN);
  backend->copy_from_host(device, source.data(), bytes);
  backend->copy(other, device, bytes);
  backend->copy_to_host(back.data(), other, bytes);
  backend->synchronize();
  EXPECT_EQ(back, source);
  backend->fill(other, 1000, 2.5f);
  backend->copy_to_host(back.data(), other, bytes);
  EXPECT_EQ(back, std::vector<float>(1000, 2.5f));
  backend->deallocate(device, bytes);
  backend->deallocate(other, bytes);
}

TEST(CpuBackendElementwise, FillLargeBuffer) {
  auto backend = make_test_backend();
  std::vector<float> data(large_count, NAN);
  backend->fill(data.data(), large_count, -1.25f);
  EXPECT_EQ(data, std::vector<float>(large_count, -1.25f));
}

// Exact formula, evaluated in float by the backend: 1 ulp-level agreement (1e-6).
TEST(CpuBackendElementwise, NormalizeImagesPerChannel) {
  auto backend = make_test_backend();
  for (const int channels : {1, 3}) {
    const std::int64_t pixels = 2 * 5 * 7;
    std::vector<std::uint8_t> images(pixels * channels);
    for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<std::uint8_t>(i * 37 % 256);
    const std::vector<float> mean{0.2860f, 0.5f, 0.1f}, standard_deviation{0.3530f, 0.25f, 2.0f};
    std::vector<float> output(images.size(), NAN);
    backend->normalize_images(images.data(), pixels, channels, mean.data(), standard_deviation.data(),
                              output.data());
    std::vector<double> expected(images.size());
    for (std::size_t i = 0; i < images.size(); ++i)
      expected[i] = (images[i] / 255.0 - mean[i % channels]) / standard_deviation[i % channels];
    EXPECT_LT(max_error(output, expected), 1e-6) << channels << " channels";
  }
}

TEST(CpuBackendElementwise, ReluForwardAndBackward) {
  auto backend = make_test_backend();
  for (const std::int64_t count : {small_count, large_count}) {
    const auto input = random_values(count, 2);
    const auto grad_output = random_values(count, 3);
    std::vector<float> output(count, NAN), grad_input(count, NAN);
    backend->relu_forward(count, input.data(), output.data());
    backend->relu_backward(count, output.data(), grad_output.data(), grad_input.data());
    for (std::int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(output[i], input[i] > 0 ? input[i] : 0.0f) << i;
      ASSERT_EQ(grad_input[i], input[i] > 0 ? grad_output[i] : 0.0f) << i;
    }
  }
}

TEST(CpuBackendElementwise, ReluInPlaceKeepsNan) {
  auto backend = make_test_backend();
  std::vector<float> data{-1.0f, 0.0f, 2.0f, NAN, -0.5f};
  backend->relu_forward(static_cast<std::int64_t>(data.size()), data.data(), data.data());
  EXPECT_EQ(data[0], 0.0f);
  EXPECT_EQ(data[1], 0.0f);
  EXPECT_EQ(data[2], 2.0f);
  EXPECT_TRUE(std::isnan(data[3]));
  EXPECT_EQ(data[4], 0.0f);
}

TEST(CpuBackendElementwise, AddAccumulateScale) {
  auto backend = make_test_backend();
  for (const std::int64_t count : {small_count, large_count}) {
    const auto a = random_values(count, 4);
    const auto b = random_values(count, 5);
    std::vector<float> sum(count, NAN);
    backend->add(count, a.data(), b.data(), sum.data());
    std::vector<float> accumulated = a;
    backend->accumulate(count, b.data(), accumulated.data());
    std::vector<float> scaled = a;
    backend->scale(count, -3.0f, scaled.data());
    std::vector<float> in_place = a;
    backend->add(count, in_place.data(), b.data(), in_place.data());
    for (std::int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(sum[i], a[i] + b[i]) << i;
      ASSERT_EQ(accumulated[i], a[i] + b[i]) << i;
      ASSERT_EQ(scaled[i], a[i] * -3.0f) << i;
      ASSERT_EQ(in_place[i], a[i] + b[i]) << i;
    }
  }
}

TEST(CpuBackendElementwise, TransposeSamples) {
  auto backend = make_test_backend();
  const std::int64_t batch = 3, rows = 49, columns = 37;  // not multiples of the tile size
  const auto input = random_values(batch * rows * columns, 6);
  std::vector<float> output(input.size(), NAN);
  backend->transpose_samples(batch, rows, columns, input.data(), output.data());
  for (std::int64_t sample = 0; sample < batch; ++sample)
    for (std::int64_t row = 0; row < rows; ++row)
      for (std::int64_t column = 0; column < columns; ++column)
        ASSERT_EQ(output[(sample * columns + column) * rows + row],
                  input[(sample * rows + row) * columns + column]);
}

}  // namespace
}  // namespace phalanx::testing
