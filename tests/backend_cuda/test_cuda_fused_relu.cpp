// The CUDA backend's fused ReLU (geometry.activation = Relu: one epilogue kernel converts the
// cuDNN/cuBLAS result to fp32, adds the bias and applies the ReLU; batch norm's ReLU follows cuDNN;
// add_relu) in every precision:
// - against the same backend's plain op followed by relu_forward: identical bits (tolerance 0),
//   NaN included, since the epilogue does the same float operations in the same order and the
//   fused and plain forward share one cuDNN plan;
// - against the CPU backend's fused op, with the plain ops' tolerances: fp32 1e-4 of the output's
//   scale (2e-3 for wide 3x3 stride-1 convolutions, see test_cuda_parity.cpp), bf16 3e-2, fp16 5e-3 (operands
//   rounded to 8 or 11 mantissa bits before fp32 accumulation), batch norm 1e-4, add_relu exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "backend/backend_test_support.hpp"
#include "backend_cuda/cuda_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::Backend;
using backend::ComputePrecision;
using backend::FusedActivation;

const char* precision_name(ComputePrecision precision) {
  switch (precision) {
    case ComputePrecision::Float32: return "fp32";
    case ComputePrecision::BFloat16: return "bf16";
    case ComputePrecision::Float16: return "fp16";
  }
  return "?";
}

// Sets the CUDA backend's precision for one scope (the CPU backend stays fp32).
class PrecisionScope {
 public:
  PrecisionScope(Backend& backend, ComputePrecision precision) : backend_(backend) {
    if (backend_.device_kind() == DeviceKind::Cuda) backend_.set_compute_precision(precision);
  }
  ~PrecisionScope() {
    if (backend_.device_kind() == DeviceKind::Cuda) backend_.set_compute_precision(ComputePrecision::Float32);
  }
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  Backend& backend_;
};

const backend::ConvolutionGeometry convolutions[] = {
    square_convolution(8, 1, 28, 32, 3, 1, 1, true),     // fmnist_cnn conv1
    square_convolution(8, 32, 14, 64, 3, 1, 1, true),    // fmnist_cnn conv2 (a wide 3x3 stride-1 case)
    square_convolution(4, 64, 14, 64, 3, 1, 1, false),   // a ResNet 3x3, no bias
    square_convolution(4, 64, 14, 128, 1, 2, 0, false),  // a ResNet stride-2 1x1 shortcut
};

const backend::LinearGeometry linears[] = {{16, 3136, 128}, {16, 128, 10}};

// One op's result on one backend: plain op then relu_forward, and the fused op.
struct Results {
  std::vector<float> plain_then_relu, fused;
};

Results convolution_results(Backend& b, const backend::ConvolutionGeometry& g, bool plant_nan) {
  const std::int64_t inputs = std::int64_t{g.batch} * g.in_height * g.in_width * g.in_channels;
  const std::int64_t outputs = std::int64_t{g.batch} * g.out_height() * g.out_width() * g.out_channels;
  const float bound = 1.0f / std::sqrt(static_cast<float>(g.in_channels * g.kernel_height * g.kernel_width));
  auto input_values = random_values(inputs, 21);
  if (plant_nan) input_values[inputs / 2] = NAN;
  Tensor input = upload(b, input_values);
  Tensor weight =
      upload(b, random_values(std::int64_t{g.out_channels} * g.in_channels * g.kernel_height * g.kernel_width,
                              22, -bound, bound));
  Tensor bias = upload(b, random_values(g.out_channels, 23));
  Tensor plain = empty_floats(b, outputs), fused = empty_floats(b, outputs);
  const float* bias_pointer = g.has_bias ? bias.data() : nullptr;
  b.convolution_forward(g, input.data(), weight.data(), bias_pointer, plain.data());
  b.relu_forward(outputs, plain.data(), plain.data());
  auto fused_geometry = g;
  fused_geometry.activation = FusedActivation::Relu;
  b.convolution_forward(fused_geometry, input.data(), weight.data(), bias_pointer, fused.data());
  return {download(b, plain), download(b, fused)};
}

Results linear_results(Backend& b, const backend::LinearGeometry& g, bool with_bias) {
  const std::int64_t outputs = std::int64_t{g.batch} * g.out_features;
  const float bound = 1.0f / std::sqrt(static_cast<float>(g.in_features));
  Tensor input = upload(b, random_values(std::int64_t{g.batch} * g.in_features, 24));
  Tensor weight = upload(b, random_values(std::int64_t{g.out_features} * g.in_features, 25, -bound, bound));
  Tensor bias = upload(b, random_values(g.out_features, 26));
  Tensor plain = empty_floats(b, outputs), fused = empty_floats(b, outputs);
  b.linear_forward(g, input.data(), weight.data(), with_bias ? bias.data() : nullptr, plain.data());
  b.relu_forward(outputs, plain.data(), plain.data());
  auto fused_geometry = g;
  fused_geometry.activation = FusedActivation::Relu;
  b.linear_forward(fused_geometry, input.data(), weight.data(), with_bias ? bias.data() : nullptr,
                   fused.data());
  return {download(b, plain), download(b, fused)};
}

Results batch_norm_results(Backend& b, bool training, bool in_place) {
  const backend::BatchNormGeometry g{16, 32, 49};
  const std::int64_t count = std::int64_t{g.batch} * g.spatial * g.channels;
  auto input_values = random_values(count, 27, -2.0f, 3.0f);
  Tensor gamma = upload(b, random_values(g.channels, 28, 0.5f, 1.5f));
  Tensor beta = upload(b, random_values(g.channels, 29));
  auto fused_geometry = g;
  fused_geometry.activation = FusedActivation::Relu;
  Results results;
  for (const bool fused : {false, true}) {
    Tensor input = upload(b, input_values);
    Tensor output = empty_floats(b, count);
    float* destination = in_place ? input.data() : output.data();
    Tensor running_mean = upload(b, std::vector<float>(g.channels, 0.1f));
    Tensor running_variance = upload(b, std::vector<float>(g.channels, 0.9f));
    Tensor saved_mean = empty_floats(b, g.channels), saved_inverse_std = empty_floats(b, g.channels);
    const auto& geometry = fused ? fused_geometry : g;
    if (training)
      b.batch_norm_forward_training(geometry, input.data(), gamma.data(), beta.data(), destination,
                                    running_mean.data(), running_variance.data(), 0.1f, saved_mean.data(),
                                    saved_inverse_std.data());
    else
      b.batch_norm_forward_inference(geometry, input.data(), gamma.data(), beta.data(), running_mean.data(),
                                     running_variance.data(), destination);
    if (!fused) b.relu_forward(count, destination, destination);
    std::vector<float> values(static_cast<std::size_t>(count));
    b.copy_to_host(values.data(), destination, values.size() * sizeof(float));
    (fused ? results.fused : results.plain_then_relu) = std::move(values);
  }
  return results;
}

Results add_relu_results(Backend& b) {
  const std::int64_t count = 100003;
  auto a_values = random_values(count, 30), b_values = random_values(count, 31);
  a_values[0] = NAN;
  a_values[1] = -0.0f;
  b_values[1] = -0.0f;
  Tensor a = upload(b, a_values), other = upload(b, b_values);
  Tensor plain = empty_floats(b, count), fused = empty_floats(b, count);
  b.add(count, a.data(), other.data(), plain.data());
  b.relu_forward(count, plain.data(), plain.data());
  b.add_relu(count, a.data(), other.data(), fused.data());
  return {download(b, plain), download(b, fused)};
}

void expect_identical_bits(const Results& results, const std::string& what) {
  ASSERT_EQ(results.fused.size(), results.plain_then_relu.size()) << what;
  EXPECT_EQ(
      std::memcmp(results.fused.data(), results.plain_then_relu.data(), results.fused.size() * sizeof(float)),
      0)
      << what << ": the fused op differs from the plain op followed by relu_forward";
}

void expect_close_to_cpu(const std::vector<float>& cuda, const std::vector<float>& cpu, double tolerance,
                         const std::string& what) {
  std::size_t worst = 0;
  const double difference = scaled_max_difference(as_doubles(cuda), as_doubles(cpu), worst);
  EXPECT_LE(difference, tolerance) << what << ": worst at " << worst;
}

constexpr ComputePrecision precisions[] = {ComputePrecision::Float32, ComputePrecision::BFloat16,
                                           ComputePrecision::Float16};

double convolution_tolerance(ComputePrecision precision, const backend::ConvolutionGeometry& g) {
  if (precision == ComputePrecision::BFloat16) return 3e-2;
  if (precision == ComputePrecision::Float16) return 5e-3;
  const bool wide_3x3 = g.kernel_height == 3 && g.stride == 1 && g.in_channels >= 32 && g.out_channels >= 32;
  return wide_3x3 ? 2e-3 : 1e-4;
}

TEST(CudaFusedRelu, ConvolutionEpilogueIsPlainThenReluBitForBitAndNearTheCpu) {
  PHALANX_SKIP_WITHOUT_CUDA();
  for (const ComputePrecision precision : precisions) {
    const PrecisionScope scope(cuda_backend(), precision);
    for (const auto& g : convolutions) {
      const std::string what = std::string(precision_name(precision)) + " conv " +
                               std::to_string(g.in_channels) + "->" + std::to_string(g.out_channels) + " k" +
                               std::to_string(g.kernel_height);
      const Results cuda = convolution_results(cuda_backend(), g, false);
      expect_identical_bits(cuda, what);
      expect_close_to_cpu(cuda.fused, convolution_results(cpu_backend(), g, false).fused,
                          convolution_tolerance(precision, g), what);
      // A NaN input: the epilogue's ReLU keeps NaN, as relu_forward does.
      const Results with_nan = convolution_results(cuda_backend(), g, true);
      expect_identical_bits(with_nan, what + " with NaN input");
      EXPECT_TRUE(std::any_of(with_nan.fused.begin(), with_nan.fused.end(), [](float v) {
        return std::isnan(v);
      })) << what;
    }
  }
}

TEST(CudaFusedRelu, LinearEpilogueIsPlainThenReluBitForBitAndNearTheCpu) {
  PHALANX_SKIP_WITHOUT_CUDA();
  for (const ComputePrecision precision : precisions) {
    const PrecisionScope scope(cuda_backend(), precision);
    const double tolerance = precision == ComputePrecision::BFloat16  ? 3e-2
                             : precision == ComputePrecision::Float16 ? 5e-3
                                                                      : 1e-4;
    for (const auto& g : linears)
      for (const bool with_bias : {true, false}) {
        const std::string what = std::string(precision_name(precision)) + " linear " +
                                 std::to_string(g.in_features) + "->" + std::to_string(g.out_features) +
                                 (with_bias ? "" : " no bias");
        const Results cuda = linear_results(cuda_backend(), g, with_bias);
        expect_identical_bits(cuda, what);
        expect_close_to_cpu(cuda.fused, linear_results(cpu_backend(), g, with_bias).fused, tolerance, what);
      }
  }
}

TEST(CudaFusedRelu, BatchNormAndAddReluArePlainThenReluBitForBitAndNearTheCpu) {
  PHALANX_SKIP_WITHOUT_CUDA();
  for (const bool training : {true, false})
    for (const bool in_place : {false, true}) {
      const std::string what =
          std::string(training ? "training" : "inference") + (in_place ? " in place" : "");
      const Results cuda = batch_norm_results(cuda_backend(), training, in_place);
      expect_identical_bits(cuda, "batch norm " + what);
      expect_close_to_cpu(cuda.fused, batch_norm_results(cpu_backend(), training, in_place).fused, 1e-4,
                          "batch norm " + what);
    }
  const Results cuda = add_relu_results(cuda_backend());
  expect_identical_bits(cuda, "add_relu");
  EXPECT_TRUE(std::isnan(cuda.fused[0]));
  EXPECT_TRUE(std::signbit(cuda.fused[1]));
  const Results cpu = add_relu_results(cpu_backend());
  EXPECT_EQ(std::memcmp(cuda.fused.data(), cpu.fused.data(), cpu.fused.size() * sizeof(float)), 0)
      << "add_relu: the same float operations give the same bits on both backends";
}

}  // namespace
}  // namespace phalanx::testing
