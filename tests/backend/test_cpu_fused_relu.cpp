// The CPU backend's ops with a fused ReLU (geometry.activation = Relu, add_relu) against the plain
// op followed by relu_forward: bitwise the same on every value that is not NaN, for each kind of
// kind of convolution the backend runs (few and many input channels, 1x1, strided without bias), linear
// layers, batch norm in training and inference, and the residual sum. NaN: add_relu and batch norm
// keep it (as relu_forward and torch.relu do); oneDNN's fused max(x, 0) may turn it into 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::FusedActivation;

std::vector<float> plain_then_relu(backend::Backend& backend, std::vector<float> values) {
  backend.relu_forward(static_cast<std::int64_t>(values.size()), values.data(), values.data());
  return values;
}

// Bitwise equal where the plain result is not NaN; where it is, the fused one is NaN or 0 (with
// `nan_must_stay`, NaN). Returns how many NaN became 0.
int expect_fused_matches(const std::vector<float>& fused, const std::vector<float>& plain, bool nan_must_stay,
                         const std::string& what) {
  EXPECT_EQ(fused.size(), plain.size()) << what;
  int nan_to_zero = 0, mismatches = 0;
  for (std::size_t i = 0; i < std::min(fused.size(), plain.size()); ++i) {
    if (std::isnan(plain[i])) {
      const bool zero = fused[i] == 0.0f;
      nan_to_zero += zero ? 1 : 0;
      if (!std::isnan(fused[i]) && !(zero && !nan_must_stay) && mismatches++ < 5)
        ADD_FAILURE() << what << ": element " << i << " is " << fused[i] << " where the plain op gives NaN";
    } else if (std::memcmp(&fused[i], &plain[i], sizeof(float)) != 0 && mismatches++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " fused " << fused[i] << " plain " << plain[i];
    }
  }
  return nan_to_zero;
}

struct ConvolutionCase {
  const char* name;
  backend::ConvolutionGeometry geometry;
};

TEST(CpuFusedRelu, ConvolutionForwardEqualsConvolutionThenRelu) {
  auto backend = make_test_backend();
  const auto conv = square_convolution;
  const ConvolutionCase cases[] = {
      {"1->32 3x3 on 28x28 (jit kernel on AVX-512)", conv(4, 1, 28, 32, 3, 1, 1, true)},
      {"32->64 3x3 on 14x14 (brgemm kernel on AVX-512)", conv(2, 32, 14, 64, 3, 1, 1, true)},
      {"16->16 3x3 stride 2, no bias", conv(3, 16, 9, 16, 3, 2, 1, false)},
      {"64->32 1x1", conv(2, 64, 6, 32, 1, 1, 0, true)},
  };
  for (const auto& [name, geometry] : cases) {
    const auto input = random_values(static_cast<std::size_t>(geometry.batch) * geometry.in_height *
                                         geometry.in_width * geometry.in_channels,
                                     1);
    const auto weight = random_values(static_cast<std::size_t>(geometry.out_channels) * geometry.in_channels *
                                          geometry.kernel_height * geometry.kernel_width,
                                      2, -0.3f, 0.3f);
    const auto bias = random_values(geometry.out_channels, 3);
    const std::size_t outputs = static_cast<std::size_t>(geometry.batch) * geometry.out_height() *
                                geometry.out_width() * geometry.out_channels;
    std::vector<float> plain(outputs), fused(outputs, NAN);
    backend->convolution_forward(geometry, input.data(), weight.data(), bias.data(), plain.data());
    auto fused_geometry = geometry;
    fused_geometry.activation = FusedActivation::Relu;
    // Twice: the first call makes the fused primitive, the second finds it in the cache.
    for (int call = 0; call < 2; ++call) {
      backend->convolution_forward(fused_geometry, input.data(), weight.data(), bias.data(), fused.data());
      expect_fused_matches(fused, plain_then_relu(*backend, plain), false, name);
    }
    // The plain op is unchanged by the fused one beside it in the cache.
    std::vector<float> again(outputs);
    backend->convolution_forward(geometry, input.data(), weight.data(), bias.data(), again.data());
    EXPECT_EQ(std::memcmp(again.data(), plain.data(), outputs * sizeof(float)), 0) << name;
    // The plain op has negative outputs (no ReLU of its own), so the fused ReLU had work to do.
    EXPECT_GT(std::count_if(plain.begin(), plain.end(), [](float value) { return value < 0.0f; }), 0) << name;
  }
}

TEST(CpuFusedRelu, ConvolutionWithNanInputKeepsEveryOtherValue) {
  auto backend = make_test_backend();
  backend::ConvolutionGeometry geometry;
  geometry.batch = 2;
  geometry.in_channels = 3;
  geometry.in_height = geometry.in_width = 8;
  geometry.out_channels = 8;
  geometry.kernel_height = geometry.kernel_width = 3;
  geometry.padding = 1;
  auto input = random_values(2 * 8 * 8 * 3, 4);
  input[100] = NAN;
  const auto weight = random_values(8 * 3 * 3 * 3, 5);
  const auto bias = random_values(8, 6);
  std::vector<float> plain(2 * 8 * 8 * 8), fused(plain.size());
  backend->convolution_forward(geometry, input.data(), weight.data(), bias.data(), plain.data());
  geometry.activation = FusedActivation::Relu;
  backend->convolution_forward(geometry, input.data(), weight.data(), bias.data(), fused.data());
  ASSERT_GT(std::count_if(plain.begin(), plain.end(), [](float value) { return std::isnan(value); }), 0);
  const int nan_to_zero = expect_fused_matches(fused, plain_then_relu(*backend, plain), false, "NaN input");
  // oneDNN's eltwise_relu post-op is max(x, 0), so on this backend the NaN outputs read 0: recorded
  // for the reader, the contract (backend.hpp) allows either.
  RecordProperty("nan_outputs_turned_to_zero", nan_to_zero);
}

TEST(CpuFusedRelu, LinearForwardEqualsLinearThenRelu) {
  auto backend = make_test_backend();
  for (const auto& geometry : {backend::LinearGeometry{16, 3136, 128}, backend::LinearGeometry{5, 128, 10}}) {
    const auto input = random_values(static_cast<std::size_t>(geometry.batch) * geometry.in_features, 7);
    const auto weight = random_values(static_cast<std::size_t>(geometry.out_features) * geometry.in_features,
                                      8, -0.05f, 0.05f);
    const auto bias = random_values(geometry.out_features, 9);
    const std::string name =
        std::to_string(geometry.in_features) + "->" + std::to_string(geometry.out_features);
    for (const float* bias_pointer : {bias.data(), static_cast<const float*>(nullptr)}) {
      std::vector<float> plain(static_cast<std::size_t>(geometry.batch) * geometry.out_features);
      std::vector<float> fused(plain.size(), NAN);
      backend->linear_forward(geometry, input.data(), weight.data(), bias_pointer, plain.data());
      auto fused_geometry = geometry;
      fused_geometry.activation = FusedActivation::Relu;
      backend->linear_forward(fused_geometry, input.data(), weight.data(), bias_pointer, fused.data());
      expect_fused_matches(fused, plain_then_relu(*backend, plain), false, name);
    }
  }
}

TEST(CpuFusedRelu, BatchNormTrainingAndInferenceEqualBatchNormThenReluAndKeepNan) {
  auto backend = make_test_backend();
  for (const auto& geometry :
       {backend::BatchNormGeometry{8, 16, 49}, backend::BatchNormGeometry{300, 24, 1}}) {
    const std::size_t count = static_cast<std::size_t>(geometry.batch) * geometry.spatial * geometry.channels;
    auto input = random_values(count, 10, -2.0f, 3.0f);
    const auto gamma = random_values(geometry.channels, 11, 0.5f, 1.5f);
    const auto beta = random_values(geometry.channels, 12);
    std::vector<float> plain(count), fused(count, NAN);
    // Same running statistics going in for both calls.
    std::vector<float> mean_a(geometry.channels, 0.1f), variance_a(geometry.channels, 0.9f);
    std::vector<float> mean_b = mean_a, variance_b = variance_a;
    std::vector<float> saved_mean_a(geometry.channels), inverse_a(geometry.channels);
    std::vector<float> saved_mean_b(geometry.channels), inverse_b(geometry.channels);
    backend->batch_norm_forward_training(geometry, input.data(), gamma.data(), beta.data(), plain.data(),
                                         mean_a.data(), variance_a.data(), 0.1f, saved_mean_a.data(),
                                         inverse_a.data());
    auto fused_geometry = geometry;
    fused_geometry.activation = FusedActivation::Relu;
    backend->batch_norm_forward_training(fused_geometry, input.data(), gamma.data(), beta.data(),
                                         fused.data(), mean_b.data(), variance_b.data(), 0.1f,
                                         saved_mean_b.data(), inverse_b.data());
    expect_fused_matches(fused, plain_then_relu(*backend, plain), true, "training");
    EXPECT_EQ(mean_a, mean_b);
    EXPECT_EQ(variance_a, variance_b);
    EXPECT_EQ(saved_mean_a, saved_mean_b);
    EXPECT_EQ(inverse_a, inverse_b);

    input[3] = NAN;  // inference is per element, so exactly one NaN comes out
    backend->batch_norm_forward_inference(geometry, input.data(), gamma.data(), beta.data(), mean_a.data(),
                                          variance_a.data(), plain.data());
    backend->batch_norm_forward_inference(fused_geometry, input.data(), gamma.data(), beta.data(),
                                          mean_a.data(), variance_a.data(), fused.data());
    EXPECT_TRUE(std::isnan(fused[3]));
    expect_fused_matches(fused, plain_then_relu(*backend, plain), true, "inference");
    // In place, as a Sequential never asks but a caller may.
    auto in_place = input;
    backend->batch_norm_forward_inference(fused_geometry, in_place.data(), gamma.data(), beta.data(),
                                          mean_a.data(), variance_a.data(), in_place.data());
    EXPECT_EQ(std::memcmp(in_place.data(), fused.data(), count * sizeof(float)), 0);
  }
}

TEST(CpuFusedRelu, AddReluEqualsAddThenReluKeepsNanAndNegativeZero) {
  auto backend = make_test_backend();
  for (const std::int64_t count : {std::int64_t{1001}, std::int64_t{100003}}) {
    auto a = random_values(static_cast<std::size_t>(count), 13);
    auto b = random_values(static_cast<std::size_t>(count), 14);
    a[0] = NAN;
    a[1] = INFINITY;
    b[2] = -INFINITY;
    a[3] = -0.0f;  // -0 + -0 = -0, which relu_forward keeps
    b[3] = -0.0f;
    a[4] = 0.5f;  // exactly 0
    b[4] = -0.5f;
    std::vector<float> plain(a.size()), fused(a.size());
    backend->add(count, a.data(), b.data(), plain.data());
    backend->relu_forward(count, plain.data(), plain.data());
    backend->add_relu(count, a.data(), b.data(), fused.data());
    EXPECT_EQ(std::memcmp(plain.data(), fused.data(), plain.size() * sizeof(float)), 0);
    EXPECT_TRUE(std::isnan(fused[0]));
    EXPECT_EQ(fused[1], INFINITY);
    EXPECT_EQ(fused[2], 0.0f);
    EXPECT_TRUE(std::signbit(fused[3]));
    // In place on either operand, as a residual block may.
    backend->add_relu(count, a.data(), b.data(), a.data());
    EXPECT_EQ(std::memcmp(a.data(), fused.data(), plain.size() * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace phalanx::testing
