// Tests of the CPU backend's pooling (max with workspace, average counting padding as
// torch.nn.AvgPool2d does, global average) against double references and finite differences.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>

#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::PoolingGeometry;
using backend::PoolingKind;

PoolingGeometry make_geometry(int batch, int channels, int height, int width, int kernel, int stride,
                              int padding, PoolingKind kind) {
  PoolingGeometry geometry;
  geometry.batch = batch;
  geometry.channels = channels;
  geometry.in_height = height;
  geometry.in_width = width;
  geometry.kernel_height = geometry.kernel_width = kernel;
  geometry.stride = stride;
  geometry.padding = padding;
  geometry.kind = kind;
  return geometry;
}

// Global average pooling as the layer sets it up: one window over the whole image, square or not.
PoolingGeometry global_average(int batch, int channels, int height, int width) {
  PoolingGeometry geometry = make_geometry(batch, channels, height, width, 1, 1, 0, PoolingKind::Average);
  geometry.kernel_height = height;
  geometry.kernel_width = width;
  return geometry;
}

std::size_t input_count(const PoolingGeometry& g) {
  return std::size_t(g.batch) * g.in_height * g.in_width * g.channels;
}
std::size_t output_count(const PoolingGeometry& g) {
  return std::size_t(g.batch) * g.out_height() * g.out_width() * g.channels;
}

// Reference forward and backward in one: for every output, the inputs of its window and their
// weights in the output (1 for the max, 1/window size for the average, padding counted).
struct Reference {
  std::vector<double> output;
  std::vector<double> grad_input;
};

Reference reference(const PoolingGeometry& g, const std::vector<float>& input,
                    const std::vector<float>& grad_output) {
  Reference result{std::vector<double>(output_count(g)), std::vector<double>(input_count(g), 0.0)};
  const double window_size = static_cast<double>(g.kernel_height) * g.kernel_width;
  for (int n = 0; n < g.batch; ++n)
    for (int oh = 0; oh < g.out_height(); ++oh)
      for (int ow = 0; ow < g.out_width(); ++ow)
        for (int c = 0; c < g.channels; ++c) {
          const std::size_t out =
              ((std::size_t(n) * g.out_height() + oh) * g.out_width() + ow) * g.channels + c;
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          std::size_t best_index = 0;
          for (int kh = 0; kh < g.kernel_height; ++kh)
            for (int kw = 0; kw < g.kernel_width; ++kw) {
              const int ih = oh * g.stride - g.padding + kh, iw = ow * g.stride - g.padding + kw;
              if (ih < 0 || ih >= g.in_height || iw < 0 || iw >= g.in_width) continue;
              const std::size_t in = ((std::size_t(n) * g.in_height + ih) * g.in_width + iw) * g.channels + c;
              sum += input[in];
              if (input[in] > best) {
                best = input[in];
                best_index = in;
              }
              if (g.kind == PoolingKind::Average) result.grad_input[in] += grad_output[out] / window_size;
            }
          if (g.kind == PoolingKind::Max) {
            result.output[out] = best;
            result.grad_input[best_index] += grad_output[out];
          } else {
            result.output[out] = sum / window_size;
          }
        }
  return result;
}

struct PoolingCase {
  std::string name;
  PoolingGeometry geometry;
};

// Test names and failure messages show the case's name, not its bytes.
void PrintTo(const PoolingCase& test_case, std::ostream* stream) {
  *stream << test_case.name;
}

class CpuPooling : public ::testing::TestWithParam<PoolingCase> {};

// Max pooling is exact; averages of at most 49 values round within 1e-6 relative.
TEST_P(CpuPooling, MatchesDoubleReference) {
  const PoolingGeometry& geometry = GetParam().geometry;
  auto backend = make_test_backend();
  const auto input = shuffled_distinct_values(input_count(geometry), 1, 0.01f);
  const auto grad_output = random_values(output_count(geometry), 2);
  const std::size_t workspace_bytes = backend->pooling_workspace_bytes(geometry);
  if (geometry.kind == PoolingKind::Max) {
    EXPECT_GT(workspace_bytes, 0u);
  }
  std::vector<std::uint8_t> workspace(workspace_bytes);
  std::vector<float> output(output_count(geometry), NAN), grad_input(input_count(geometry), NAN);
  backend->pooling_forward(geometry, input.data(), output.data(), workspace.data());
  backend->pooling_backward(geometry, grad_output.data(), workspace.data(), grad_input.data());
  backend->synchronize();
  const Reference expected = reference(geometry, input, grad_output);
  EXPECT_LT(max_error(output, expected.output), 1e-5);
  EXPECT_LT(max_error(grad_input, expected.grad_input), 1e-5);

  // Evaluation passes no workspace and must get the same output.
  std::vector<float> evaluation_output(output_count(geometry), NAN);
  backend->pooling_forward(geometry, input.data(), evaluation_output.data(), nullptr);
  EXPECT_EQ(evaluation_output, output);
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, CpuPooling,
    ::testing::Values(
        PoolingCase{"Max2x2", make_geometry(2, 3, 6, 6, 2, 2, 0, PoolingKind::Max)},
        PoolingCase{"MaxOddInputFloors", make_geometry(2, 4, 7, 5, 2, 2, 0, PoolingKind::Max)},
        PoolingCase{"MaxOverlapping3x3Padded", make_geometry(2, 5, 7, 7, 3, 2, 1, PoolingKind::Max)},
        PoolingCase{"FashionMax", make_geometry(2, 32, 28, 28, 2, 2, 0, PoolingKind::Max)},
        PoolingCase{"Average2x2", make_geometry(2, 3, 6, 8, 2, 2, 0, PoolingKind::Average)},
        PoolingCase{"AveragePaddedCountsPadding", make_geometry(2, 4, 5, 5, 3, 1, 1, PoolingKind::Average)},
        PoolingCase{"GlobalAverage", make_geometry(3, 16, 7, 7, 7, 7, 0, PoolingKind::Average)},
        PoolingCase{"GlobalAverageTall", global_average(2, 8, 7, 4)},
        PoolingCase{"GlobalAverageWide", global_average(2, 8, 2, 5)}),
    [](const ::testing::TestParamInfo<PoolingCase>& info) { return info.param.name; });

// Finite differences of sum(output * probe). Inputs are distinct and 0.05 apart, eps 1e-2 never
// changes a window's maximum, so both poolings are linear around the point and the differences
// are exact up to float rounding; tolerance 1e-2 relative.
TEST(CpuPoolingGradient, MatchesFiniteDifferences) {
  auto backend = make_test_backend();
  for (const PoolingKind kind : {PoolingKind::Max, PoolingKind::Average}) {
    const auto geometry = make_geometry(2, 3, 5, 5, 3, 2, 1, kind);
    auto input = shuffled_distinct_values(input_count(geometry), 3, 0.05f);
    const auto probe = random_values(output_count(geometry), 4);
    std::vector<std::uint8_t> workspace(backend->pooling_workspace_bytes(geometry));
    std::vector<float> output(output_count(geometry)), grad_input(input_count(geometry));
    backend->pooling_forward(geometry, input.data(), output.data(), workspace.data());
    backend->pooling_backward(geometry, probe.data(), workspace.data(), grad_input.data());
    const auto objective = [&] {
      backend->pooling_forward(geometry, input.data(), output.data(), workspace.data());
      return weighted_sum(output, probe);
    };
    EXPECT_LT(gradient_check_error(input, grad_input, objective, 1e-2f), 1e-2)
        << (kind == PoolingKind::Max ? "max" : "average");
  }
}

}  // namespace
}  // namespace phalanx::testing
