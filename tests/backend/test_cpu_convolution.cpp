// Tests of the CPU backend's convolutions against a direct double-precision reference (NHWC
// activations, oihw weights; grouped, depthwise and dilated included) and against finite
// differences of the float op itself.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::ConvolutionGeometry;

ConvolutionGeometry make_geometry(int batch, int in_channels, int height, int width, int out_channels,
                                  int kernel_height, int kernel_width, int stride, int padding, bool has_bias,
                                  int groups = 1, int dilation = 1) {
  ConvolutionGeometry geometry;
  geometry.batch = batch;
  geometry.in_channels = in_channels;
  geometry.in_height = height;
  geometry.in_width = width;
  geometry.out_channels = out_channels;
  geometry.kernel_height = kernel_height;
  geometry.kernel_width = kernel_width;
  geometry.stride = stride;
  geometry.padding = padding;
  geometry.has_bias = has_bias;
  geometry.groups = groups;
  geometry.dilation = dilation;
  return geometry;
}

// Calls visit(output_index, input_index, weight_index) for every multiply of the convolution,
// so forward and both backward references share one definition of the index arithmetic. Written
// from torch.nn.Conv2d's definition: output channel o belongs to group o / (out / groups) and reads
// that group's in / groups input channels; tap (kh, kw) reads the input `dilation` apart.
template <typename Visit>
void for_each_product(const ConvolutionGeometry& g, Visit&& visit) {
  const int group_outputs = g.out_channels / g.groups, group_inputs = g.in_channels / g.groups;
  for (int n = 0; n < g.batch; ++n)
    for (int oh = 0; oh < g.out_height(); ++oh)
      for (int ow = 0; ow < g.out_width(); ++ow)
        for (int o = 0; o < g.out_channels; ++o)
          for (int kh = 0; kh < g.kernel_height; ++kh)
            for (int kw = 0; kw < g.kernel_width; ++kw) {
              const int ih = oh * g.stride - g.padding + kh * g.dilation;
              const int iw = ow * g.stride - g.padding + kw * g.dilation;
              if (ih < 0 || ih >= g.in_height || iw < 0 || iw >= g.in_width) continue;
              for (int i = 0; i < group_inputs; ++i) {
                const int channel = (o / group_outputs) * group_inputs + i;
                const std::size_t output_index =
                    ((std::size_t(n) * g.out_height() + oh) * g.out_width() + ow) * g.out_channels + o;
                const std::size_t input_index =
                    ((std::size_t(n) * g.in_height + ih) * g.in_width + iw) * g.in_channels + channel;
                const std::size_t weight_index =
                    ((std::size_t(o) * group_inputs + i) * g.kernel_height + kh) * g.kernel_width + kw;
                visit(output_index, input_index, weight_index);
              }
            }
}

std::vector<double> reference_forward(const ConvolutionGeometry& g, const std::vector<float>& input,
                                      const std::vector<float>& weight, const std::vector<float>& bias) {
  std::vector<double> output(g.output_elements(), 0.0);
  if (g.has_bias)
    for (std::size_t index = 0; index < output.size(); ++index) output[index] = bias[index % g.out_channels];
  for_each_product(g, [&](std::size_t out, std::size_t in, std::size_t w) {
    output[out] += static_cast<double>(input[in]) * weight[w];
  });
  return output;
}

std::vector<double> reference_backward_data(const ConvolutionGeometry& g,
                                            const std::vector<float>& grad_output,
                                            const std::vector<float>& weight) {
  std::vector<double> grad_input(g.input_elements(), 0.0);
  for_each_product(g, [&](std::size_t out, std::size_t in, std::size_t w) {
    grad_input[in] += static_cast<double>(grad_output[out]) * weight[w];
  });
  return grad_input;
}

std::vector<double> reference_backward_weights(const ConvolutionGeometry& g, const std::vector<float>& input,
                                               const std::vector<float>& grad_output) {
  std::vector<double> grad_weight(g.weight_elements(), 0.0);
  for_each_product(g, [&](std::size_t out, std::size_t in, std::size_t w) {
    grad_weight[w] += static_cast<double>(grad_output[out]) * input[in];
  });
  return grad_weight;
}

std::vector<double> reference_backward_bias(const ConvolutionGeometry& g,
                                            const std::vector<float>& grad_output) {
  std::vector<double> grad_bias(g.out_channels, 0.0);
  for (std::size_t index = 0; index < grad_output.size(); ++index)
    grad_bias[index % g.out_channels] += grad_output[index];
  return grad_bias;
}

struct ConvolutionCase {
  std::string name;
  ConvolutionGeometry geometry;
  double tolerance = 1e-4;
};

// Test names and failure messages show the case's name, not its bytes.
void PrintTo(const ConvolutionCase& test_case, std::ostream* stream) {
  *stream << test_case.name;
}

class CpuConvolution : public ::testing::TestWithParam<ConvolutionCase> {};

// Float results against the double reference, error relative to max(1, |reference|). Every
// convolution is direct (oneDNN 3 has no Winograd on CPUs) and accumulates a few hundred float
// products (observed <= 2e-5): 1e-4.
TEST_P(CpuConvolution, MatchesDoubleReference) {
  const ConvolutionGeometry& geometry = GetParam().geometry;
  auto backend = make_test_backend();
  const auto input = random_values(geometry.input_elements(), 1);
  const auto weight = random_values(geometry.weight_elements(), 2);
  const auto bias = random_values(geometry.out_channels, 3);
  const auto grad_output = random_values(geometry.output_elements(), 4);

  std::vector<float> output(geometry.output_elements(), NAN);
  backend->convolution_forward(geometry, input.data(), weight.data(),
                               geometry.has_bias ? bias.data() : nullptr, output.data());
  std::vector<float> grad_input(geometry.input_elements(), NAN);
  backend->convolution_backward_data(geometry, grad_output.data(), weight.data(), grad_input.data());
  std::vector<float> grad_weight(geometry.weight_elements(), NAN), grad_bias(geometry.out_channels, NAN);
  backend->convolution_backward_weights(geometry, input.data(), grad_output.data(), grad_weight.data(),
                                        geometry.has_bias ? grad_bias.data() : nullptr);
  backend->synchronize();

  const double tolerance = GetParam().tolerance;
  EXPECT_LT(max_error(output, reference_forward(geometry, input, weight, bias)), tolerance);
  EXPECT_LT(max_error(grad_input, reference_backward_data(geometry, grad_output, weight)), tolerance);
  EXPECT_LT(max_error(grad_weight, reference_backward_weights(geometry, input, grad_output)), tolerance);
  if (geometry.has_bias) {
    EXPECT_LT(max_error(grad_bias, reference_backward_bias(geometry, grad_output)), tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, CpuConvolution,
    ::testing::Values(
        ConvolutionCase{"Same3x3", make_geometry(2, 3, 7, 6, 4, 3, 3, 1, 1, true)},
        ConvolutionCase{"Stride2Padding1NoBias", make_geometry(2, 5, 8, 9, 3, 3, 3, 2, 1, false)},
        ConvolutionCase{"Kernel5Stride2Valid", make_geometry(3, 3, 11, 11, 8, 5, 5, 2, 0, true)},
        ConvolutionCase{"NonSquareKernel", make_geometry(2, 4, 6, 7, 5, 3, 2, 1, 1, true)},
        ConvolutionCase{"Stride2OddPadding2", make_geometry(1, 2, 9, 8, 3, 3, 3, 2, 2, true)},
        ConvolutionCase{"FashionFirstLayer", make_geometry(2, 1, 28, 28, 32, 3, 3, 1, 1, true)},
        ConvolutionCase{"FashionSecondLayer", make_geometry(2, 32, 14, 14, 64, 3, 3, 1, 1, true)},
        ConvolutionCase{"WideStride2", make_geometry(2, 32, 9, 9, 48, 3, 3, 2, 1, true)},
        ConvolutionCase{"WideNoBiasPadding0", make_geometry(2, 48, 8, 7, 32, 3, 3, 1, 0, false)},
        // groups and dilation (make_geometry's last two arguments)
        ConvolutionCase{"Groups2", make_geometry(2, 6, 7, 6, 4, 3, 3, 1, 1, true, 2)},
        ConvolutionCase{"Groups4Stride2NoBias", make_geometry(2, 8, 9, 8, 12, 3, 3, 2, 1, false, 4)},
        ConvolutionCase{"Depthwise3x3", make_geometry(2, 16, 8, 8, 16, 3, 3, 1, 1, true, 16)},
        ConvolutionCase{"DepthwiseStride2", make_geometry(2, 24, 9, 10, 24, 3, 3, 2, 1, false, 24)},
        ConvolutionCase{"DepthwiseMultiplier2", make_geometry(2, 8, 7, 7, 16, 5, 5, 1, 2, true, 8)},
        ConvolutionCase{"Dilation2", make_geometry(2, 5, 11, 9, 6, 3, 3, 1, 2, true, 1, 2)},
        ConvolutionCase{"Dilation3Stride2Valid", make_geometry(2, 4, 13, 12, 3, 3, 2, 2, 0, false, 1, 3)},
        ConvolutionCase{"GroupedDilated", make_geometry(2, 12, 10, 10, 6, 3, 3, 1, 2, true, 3, 2)},
        ConvolutionCase{"DepthwiseDilated", make_geometry(2, 32, 9, 9, 32, 3, 3, 1, 2, true, 32, 2)},
        // Depthwise weight gradients in fp32 are the backend's own loop: more samples than one
        // block of 4 (and not a multiple of it), more channels than one block of 64 (and not a
        // multiple of it), a 5x5 kernel on a non-square input, and a 1-sample batch.
        ConvolutionCase{"DepthwiseManyChannels5x5", make_geometry(5, 144, 9, 7, 144, 5, 5, 2, 2, true, 144)},
        ConvolutionCase{"DepthwiseOneSample", make_geometry(1, 72, 6, 6, 72, 3, 3, 1, 1, false, 72)}),
    [](const ::testing::TestParamInfo<ConvolutionCase>& info) { return info.param.name; });

// The cache binds caller pointers at every call: a second geometry in between and fresh
// buffers for the first must not reuse stale pointers or primitives.
TEST(CpuConvolutionCache, InterleavedGeometriesUseTheirOwnData) {
  auto backend = make_test_backend();
  const auto first = make_geometry(2, 3, 6, 6, 4, 3, 3, 1, 1, true);
  const auto second = make_geometry(1, 4, 5, 5, 2, 3, 3, 2, 0, false);
  for (int round = 0; round < 2; ++round) {
    for (const auto& geometry : {first, second}) {
      const auto input = random_values(geometry.input_elements(), 10 + round);
      const auto weight = random_values(geometry.weight_elements(), 20 + round);
      const auto bias = random_values(geometry.out_channels, 30 + round);
      std::vector<float> output(geometry.output_elements(), NAN);
      backend->convolution_forward(geometry, input.data(), weight.data(), bias.data(), output.data());
      EXPECT_LT(max_error(output, reference_forward(geometry, input, weight, bias)), 1e-4);
    }
  }
}

// Same inputs, same thread count: bitwise the same gradients (no racing reductions).
TEST(CpuConvolutionDeterminism, BackwardWeightsIsBitwiseRepeatable) {
  auto backend = make_test_backend();
  const auto geometry = make_geometry(4, 32, 14, 14, 64, 3, 3, 1, 1, true);
  const auto input = random_values(geometry.input_elements(), 5);
  const auto grad_output = random_values(geometry.output_elements(), 6);
  std::vector<float> first_weight(geometry.weight_elements()), first_bias(64);
  std::vector<float> second_weight(geometry.weight_elements()), second_bias(64);
  backend->convolution_backward_weights(geometry, input.data(), grad_output.data(), first_weight.data(),
                                        first_bias.data());
  backend->convolution_backward_weights(geometry, input.data(), grad_output.data(), second_weight.data(),
                                        second_bias.data());
  EXPECT_EQ(first_weight, second_weight);
  EXPECT_EQ(first_bias, second_bias);
}

// A caller with a bias that does not want its gradient passes null.
TEST(CpuConvolutionBackward, NullGradBiasIsAllowedWithBias) {
  auto backend = make_test_backend();
  const auto geometry = make_geometry(1, 2, 5, 5, 3, 3, 3, 1, 1, true);
  const auto input = random_values(geometry.input_elements(), 7);
  const auto grad_output = random_values(geometry.output_elements(), 8);
  std::vector<float> grad_weight(geometry.weight_elements(), NAN);
  backend->convolution_backward_weights(geometry, input.data(), grad_output.data(), grad_weight.data(),
                                        nullptr);
  EXPECT_LT(max_error(grad_weight, reference_backward_weights(geometry, input, grad_output)), 1e-4);
}

// convolution_backward (both directions in one call, as nn::Convolution calls it) computes exactly
// what the two separate ops compute, bit for bit, with and without a bias and its gradient.
TEST(CpuConvolutionBackward, CombinedEqualsTheSeparateOpsBitwise) {
  auto backend = make_test_backend();
  const ConvolutionGeometry geometries[] = {make_geometry(2, 3, 9, 7, 8, 3, 3, 1, 1, true),
                                            make_geometry(3, 16, 8, 8, 16, 1, 1, 2, 0, false),
                                            make_geometry(2, 8, 11, 11, 4, 5, 5, 2, 2, true),
                                            make_geometry(6, 96, 8, 8, 96, 3, 3, 2, 1, false, 96)};
  std::uint64_t stream = 40;
  for (const auto& geometry : geometries) {
    SCOPED_TRACE(::testing::Message() << geometry.in_channels << "->" << geometry.out_channels << " kernel "
                                      << geometry.kernel_height << " stride " << geometry.stride);
    const auto input = random_values(geometry.input_elements(), ++stream);
    const auto weight = random_values(geometry.weight_elements(), ++stream);
    const auto grad_output = random_values(geometry.output_elements(), ++stream);
    std::vector<float> separate_input(geometry.input_elements(), NAN),
        separate_weight(geometry.weight_elements(), NAN), separate_bias(geometry.out_channels, NAN);
    backend->convolution_backward_weights(geometry, input.data(), grad_output.data(), separate_weight.data(),
                                          geometry.has_bias ? separate_bias.data() : nullptr);
    backend->convolution_backward_data(geometry, grad_output.data(), weight.data(), separate_input.data());
    std::vector<float> combined_input(geometry.input_elements(), NAN),
        combined_weight(geometry.weight_elements(), NAN), combined_bias(geometry.out_channels, NAN);
    backend->convolution_backward(geometry, input.data(), grad_output.data(), weight.data(),
                                  combined_input.data(), combined_weight.data(),
                                  geometry.has_bias ? combined_bias.data() : nullptr);
    EXPECT_EQ(combined_input, separate_input);
    EXPECT_EQ(combined_weight, separate_weight);
    if (geometry.has_bias) {
      EXPECT_EQ(combined_bias, separate_bias);
    }
    // The results are right, not only equal: against the double reference.
    EXPECT_LT(max_error(combined_input, reference_backward_data(geometry, grad_output, weight)), 1e-4);
  }
}

// The first layer passes no grad_input: the call computes the weight and bias gradients alone (and
// never hands oneDNN a null destination).
TEST(CpuConvolutionBackward, CombinedWithoutGradInputComputesTheWeightGradientsOnly) {
  auto backend = make_test_backend();
  const auto geometry = make_geometry(2, 1, 12, 12, 6, 3, 3, 1, 1, true);
  const auto input = random_values(geometry.input_elements(), 60);
  const auto weight = random_values(geometry.weight_elements(), 61);
  const auto grad_output = random_values(geometry.output_elements(), 62);
  std::vector<float> grad_weight(geometry.weight_elements(), NAN), grad_bias(geometry.out_channels, NAN);
  backend->convolution_backward(geometry, input.data(), grad_output.data(), weight.data(), nullptr,
                                grad_weight.data(), grad_bias.data());
  std::vector<float> expected_weight(geometry.weight_elements()), expected_bias(geometry.out_channels);
  backend->convolution_backward_weights(geometry, input.data(), grad_output.data(), expected_weight.data(),
                                        expected_bias.data());
  EXPECT_EQ(grad_weight, expected_weight);
  EXPECT_EQ(grad_bias, expected_bias);
  EXPECT_LT(max_error(grad_weight, reference_backward_weights(geometry, input, grad_output)), 1e-4);
}

// Finite differences of objective = sum(output * probe) in double over the float forward.
// The convolution is linear in each argument, so central differences are exact up to float
// rounding of the objective (~1e-6 relative); eps 1e-2 and tolerance 1e-2 leave a wide margin
// while an index or transposition bug gives errors of order 1.
TEST(CpuConvolutionGradient, MatchesFiniteDifferences) {
  auto backend = make_test_backend();
  const auto geometry = make_geometry(2, 3, 5, 4, 2, 3, 3, 2, 1, true);
  auto input = random_values(geometry.input_elements(), 11);
  auto weight = random_values(geometry.weight_elements(), 12);
  auto bias = random_values(geometry.out_channels, 13);
  const auto probe = random_values(geometry.output_elements(), 14);
  std::vector<float> output(geometry.output_elements());
  const auto objective = [&] {
    backend->convolution_forward(geometry, input.data(), weight.data(), bias.data(), output.data());
    return weighted_sum(output, probe);
  };
  std::vector<float> grad_input(geometry.input_elements()), grad_weight(geometry.weight_elements()),
      grad_bias(geometry.out_channels);
  backend->convolution_backward_data(geometry, probe.data(), weight.data(), grad_input.data());
  backend->convolution_backward_weights(geometry, input.data(), probe.data(), grad_weight.data(),
                                        grad_bias.data());
  EXPECT_LT(gradient_check_error(input, grad_input, objective, 1e-2f), 1e-2);
  EXPECT_LT(gradient_check_error(weight, grad_weight, objective, 1e-2f), 1e-2);
  EXPECT_LT(gradient_check_error(bias, grad_bias, objective, 1e-2f), 1e-2);
}

// The same finite-difference check for grouped, depthwise and dilated convolutions: the double
// reference above shares its index arithmetic across directions, while this check ties each
// backward direction to the forward op alone.
TEST(CpuConvolutionGradient, GroupedDepthwiseAndDilatedMatchFiniteDifferences) {
  auto backend = make_test_backend();
  const ConvolutionCase cases[] = {
      {"Grouped", make_geometry(2, 6, 5, 5, 4, 3, 3, 1, 1, true, 2)},
      {"Depthwise", make_geometry(2, 4, 6, 5, 4, 3, 3, 2, 1, true, 4)},
      {"Dilated", make_geometry(2, 3, 7, 6, 2, 3, 3, 1, 1, true, 1, 2)},
      {"GroupedDilatedStride2", make_geometry(1, 4, 9, 8, 6, 3, 3, 2, 2, true, 2, 3)}};
  std::uint64_t stream = 70;
  for (const ConvolutionCase& test_case : cases) {
    SCOPED_TRACE(test_case.name);
    const ConvolutionGeometry& geometry = test_case.geometry;
    auto input = random_values(geometry.input_elements(), ++stream);
    auto weight = random_values(geometry.weight_elements(), ++stream);
    auto bias = random_values(geometry.out_channels, ++stream);
    const auto probe = random_values(geometry.output_elements(), ++stream);
    std::vector<float> output(geometry.output_elements());
    const auto objective = [&] {
      backend->convolution_forward(geometry, input.data(), weight.data(), bias.data(), output.data());
      return weighted_sum(output, probe);
    };
    std::vector<float> grad_input(geometry.input_elements()), grad_weight(geometry.weight_elements()),
        grad_bias(geometry.out_channels);
    backend->convolution_backward(geometry, input.data(), probe.data(), weight.data(), grad_input.data(),
                                  grad_weight.data(), grad_bias.data());
    EXPECT_LT(gradient_check_error(input, grad_input, objective, 1e-2f), 1e-2);
    EXPECT_LT(gradient_check_error(weight, grad_weight, objective, 1e-2f), 1e-2);
    EXPECT_LT(gradient_check_error(bias, grad_bias, objective, 1e-2f), 1e-2);
  }
}

// A grouped layer's weights are PyTorch's [out, in / groups, kh, kw]: group g's outputs must not
// see the other groups' inputs. Zeroing group 1's input must leave group 0's outputs as they were
// and change group 1's (an implementation that mixed groups, or read the weights as [out, in],
// would fail one or the other).
TEST(CpuConvolutionGroups, EachGroupReadsOnlyItsOwnChannels) {
  auto backend = make_test_backend();
  const auto geometry = make_geometry(1, 4, 5, 5, 6, 3, 3, 1, 1, false, 2);
  auto input = random_values(geometry.input_elements(), 90);
  const auto weight = random_values(geometry.weight_elements(), 91);
  std::vector<float> before(geometry.output_elements()), after(geometry.output_elements());
  backend->convolution_forward(geometry, input.data(), weight.data(), nullptr, before.data());
  for (std::size_t index = 0; index < input.size(); ++index)
    if (index % 4 >= 2) input[index] = 0.0f;
  backend->convolution_forward(geometry, input.data(), weight.data(), nullptr, after.data());
  int changed_in_group_1 = 0;
  for (std::size_t index = 0; index < before.size(); ++index) {
    if (index % 6 < 3) {
      EXPECT_EQ(before[index], after[index]) << index;
    } else if (before[index] != after[index]) {
      ++changed_in_group_1;
    }
  }
  EXPECT_GT(changed_in_group_1, 0);
}

}  // namespace
}  // namespace phalanx::testing
