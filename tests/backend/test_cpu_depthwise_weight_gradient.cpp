// The CPU backend's own depthwise weight gradient (cpu/depthwise_weight_gradient.hpp), called
// directly: the backend runs it only for the shapes where oneDNN has no depthwise kernel, which
// depends on the oneDNN release, so these tests do not go through the dispatch. Against a double
// reference from torch.nn.Conv2d's definition, and the same bits for one and two threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/backend_test_support.hpp"
#include "cpu/depthwise_weight_gradient.hpp"

namespace phalanx::testing {
namespace {

using backend::ConvolutionGeometry;

struct DepthwiseCase {
  std::string name;
  int batch, channels, height, width, kernel, stride, padding, dilation;
};

void PrintTo(const DepthwiseCase& test_case, std::ostream* stream) {
  *stream << test_case.name;
}

ConvolutionGeometry geometry_of(const DepthwiseCase& test_case) {
  ConvolutionGeometry geometry;
  geometry.batch = test_case.batch;
  geometry.in_channels = geometry.out_channels = geometry.groups = test_case.channels;
  geometry.in_height = test_case.height;
  geometry.in_width = test_case.width;
  geometry.kernel_height = geometry.kernel_width = test_case.kernel;
  geometry.stride = test_case.stride;
  geometry.padding = test_case.padding;
  geometry.dilation = test_case.dilation;
  geometry.has_bias = true;
  return geometry;
}

// grad_weight[c][kh][kw] and, after them, grad_bias[c] in double.
std::vector<double> reference(const ConvolutionGeometry& g, const std::vector<float>& input,
                              const std::vector<float>& grad_output) {
  const int taps = g.kernel_height * g.kernel_width, channels = g.in_channels;
  std::vector<double> result(static_cast<std::size_t>(channels) * (taps + 1), 0.0);
  for (int n = 0; n < g.batch; ++n)
    for (int oh = 0; oh < g.out_height(); ++oh)
      for (int ow = 0; ow < g.out_width(); ++ow)
        for (int c = 0; c < channels; ++c) {
          const double gradient =
              grad_output[((static_cast<std::size_t>(n) * g.out_height() + oh) * g.out_width() + ow) * channels + c];
          result[static_cast<std::size_t>(channels) * taps + c] += gradient;
          for (int kh = 0; kh < g.kernel_height; ++kh)
            for (int kw = 0; kw < g.kernel_width; ++kw) {
              const int ih = oh * g.stride - g.padding + kh * g.dilation;
              const int iw = ow * g.stride - g.padding + kw * g.dilation;
              if (ih < 0 || ih >= g.in_height || iw < 0 || iw >= g.in_width) continue;
              result[static_cast<std::size_t>(c) * taps + kh * g.kernel_width + kw] +=
                  gradient * input[((static_cast<std::size_t>(n) * g.in_height + ih) * g.in_width + iw) * channels + c];
            }
        }
  return result;
}

class CpuDepthwiseWeightGradient : public ::testing::TestWithParam<DepthwiseCase> {};

// Sums of at most a few thousand float products: 1e-4 relative to max(1, |reference|).
TEST_P(CpuDepthwiseWeightGradient, MatchesDoubleReference) {
  const ConvolutionGeometry geometry = geometry_of(GetParam());
  ASSERT_TRUE(backend::cpu::is_depthwise(geometry));
  const auto input = random_values(geometry.input_elements(), 1);
  const auto grad_output = random_values(geometry.output_elements(), 2);
  std::vector<float> grad_weight(geometry.weight_elements(), NAN), grad_bias(geometry.out_channels, NAN);
  std::vector<float> workspace;
  backend::cpu::depthwise_weight_gradient(geometry, input.data(), grad_output.data(), grad_weight.data(),
                                          grad_bias.data(), workspace);
  std::vector<float> both = grad_weight;
  both.insert(both.end(), grad_bias.begin(), grad_bias.end());
  EXPECT_LT(max_error(both, reference(geometry, input, grad_output)), 1e-4);

  // Without a bias gradient the weight gradient is the same.
  std::vector<float> alone(geometry.weight_elements(), NAN);
  backend::cpu::depthwise_weight_gradient(geometry, input.data(), grad_output.data(), alone.data(), nullptr,
                                          workspace);
  EXPECT_EQ(alone, grad_weight);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuDepthwiseWeightGradient,
    ::testing::Values(
        // name, batch, channels, height, width, kernel, stride, padding, dilation
        DepthwiseCase{"Small3x3", 2, 8, 6, 5, 3, 1, 1, 1},
        // more than one block of 4 samples and of 64 channels, neither a multiple
        DepthwiseCase{"ManySamplesAndChannels", 10, 150, 5, 6, 3, 2, 1, 1},
        DepthwiseCase{"FiveByFiveStride2", 3, 40, 9, 7, 5, 2, 2, 1},
        DepthwiseCase{"TwoByTwoMap", 9, 384, 2, 2, 3, 1, 1, 1},
        DepthwiseCase{"OneByOneMap", 5, 96, 1, 1, 3, 1, 1, 1},
        DepthwiseCase{"Dilated", 2, 24, 9, 9, 3, 1, 2, 2},
        DepthwiseCase{"NoPaddingOneSample", 1, 17, 7, 7, 3, 1, 0, 1}),
    [](const ::testing::TestParamInfo<DepthwiseCase>& info) { return info.param.name; });

// Samples are summed in fixed blocks and the blocks in order: 1 and 2 threads give the same bits.
TEST(CpuDepthwiseWeightGradientThreads, OneAndTwoThreadsGiveTheSameBits) {
  const ConvolutionGeometry geometry = geometry_of({"", 13, 200, 4, 4, 5, 1, 2, 1});
  const auto input = random_values(geometry.input_elements(), 3);
  const auto grad_output = random_values(geometry.output_elements(), 4);
  const int previous_threads = omp_get_max_threads();
  std::vector<std::vector<float>> results;
  std::vector<float> workspace(1, NAN);  // reused and stale between calls, as in the backend
  for (const int threads : {1, 2}) {
    omp_set_num_threads(threads);
    std::vector<float> grad_weight(geometry.weight_elements()), grad_bias(geometry.out_channels);
    backend::cpu::depthwise_weight_gradient(geometry, input.data(), grad_output.data(), grad_weight.data(),
                                            grad_bias.data(), workspace);
    grad_weight.insert(grad_weight.end(), grad_bias.begin(), grad_bias.end());
    results.push_back(grad_weight);
  }
  omp_set_num_threads(previous_threads);
  EXPECT_EQ(results[0], results[1]);
}

}  // namespace
}  // namespace phalanx::testing
