// Tests of the CPU backend's linear layer (input [batch, in], PyTorch weight [out, in]) against
// a double-precision reference and finite differences.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::LinearGeometry;

struct ReferenceLinear {
  std::vector<double> output, grad_input, grad_weight, grad_bias;
};

ReferenceLinear reference(const LinearGeometry& g, const std::vector<float>& input,
                          const std::vector<float>& weight, const std::vector<float>& bias,
                          const std::vector<float>& grad_output) {
  ReferenceLinear result{std::vector<double>(std::size_t(g.batch) * g.out_features),
                         std::vector<double>(std::size_t(g.batch) * g.in_features, 0.0),
                         std::vector<double>(std::size_t(g.out_features) * g.in_features, 0.0),
                         std::vector<double>(g.out_features, 0.0)};
  for (int n = 0; n < g.batch; ++n)
    for (int o = 0; o < g.out_features; ++o) {
      const std::size_t out = std::size_t(n) * g.out_features + o;
      double sum = bias.empty() ? 0.0 : bias[o];
      for (int i = 0; i < g.in_features; ++i) {
        const std::size_t in = std::size_t(n) * g.in_features + i, w = std::size_t(o) * g.in_features + i;
        sum += static_cast<double>(input[in]) * weight[w];
        result.grad_input[in] += static_cast<double>(grad_output[out]) * weight[w];
        result.grad_weight[w] += static_cast<double>(grad_output[out]) * input[in];
      }
      result.output[out] = sum;
      result.grad_bias[o] += grad_output[out];
    }
  return result;
}

struct LinearCase {
  std::string name;
  LinearGeometry geometry;
};

// Test names and failure messages show the case's name, not its bytes.
void PrintTo(const LinearCase& test_case, std::ostream* stream) {
  *stream << test_case.name;
}

class CpuLinear : public ::testing::TestWithParam<LinearCase> {};

// Float dot products of up to 3136 terms in [-1, 1]: errors around 1e-6 relative to max(1, |x|);
// tolerance 1e-4.
TEST_P(CpuLinear, MatchesDoubleReference) {
  const LinearGeometry& geometry = GetParam().geometry;
  auto backend = make_test_backend();
  const auto input = random_values(std::size_t(geometry.batch) * geometry.in_features, 1);
  const auto weight = random_values(std::size_t(geometry.out_features) * geometry.in_features, 2);
  const auto bias = random_values(geometry.out_features, 3);
  const auto grad_output = random_values(std::size_t(geometry.batch) * geometry.out_features, 4);
  std::vector<float> output(grad_output.size(), NAN), grad_input(input.size(), NAN),
      grad_weight(weight.size(), NAN), grad_bias(bias.size(), NAN);
  backend->linear_forward(geometry, input.data(), weight.data(), bias.data(), output.data());
  backend->linear_backward(geometry, input.data(), weight.data(), grad_output.data(), grad_input.data(),
                           grad_weight.data(), grad_bias.data());
  backend->synchronize();
  const ReferenceLinear expected = reference(geometry, input, weight, bias, grad_output);
  EXPECT_LT(max_error(output, expected.output), 1e-4);
  EXPECT_LT(max_error(grad_input, expected.grad_input), 1e-4);
  EXPECT_LT(max_error(grad_weight, expected.grad_weight), 1e-4);
  EXPECT_LT(max_error(grad_bias, expected.grad_bias), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Geometries, CpuLinear,
                         ::testing::Values(LinearCase{"Small", LinearGeometry{5, 7, 3}},
                                           LinearCase{"SingleSample", LinearGeometry{1, 16, 10}},
                                           LinearCase{"FashionHidden", LinearGeometry{4, 3136, 128}},
                                           LinearCase{"FashionClassifier", LinearGeometry{64, 128, 10}}),
                         [](const ::testing::TestParamInfo<LinearCase>& info) { return info.param.name; });

// Optional pieces: no bias in forward, no grad_input (first layer), no grad_bias.
TEST(CpuLinearOptional, NullBiasGradInputAndGradBias) {
  auto backend = make_test_backend();
  const LinearGeometry geometry{3, 6, 4};
  const auto input = random_values(18, 5);
  const auto weight = random_values(24, 6);
  const auto grad_output = random_values(12, 7);
  std::vector<float> output(12, NAN), grad_weight(24, NAN);
  backend->linear_forward(geometry, input.data(), weight.data(), nullptr, output.data());
  backend->linear_backward(geometry, input.data(), weight.data(), grad_output.data(), nullptr,
                           grad_weight.data(), nullptr);
  const ReferenceLinear expected = reference(geometry, input, weight, {}, grad_output);
  EXPECT_LT(max_error(output, expected.output), 1e-5);
  EXPECT_LT(max_error(grad_weight, expected.grad_weight), 1e-5);
}

// Finite differences of sum(output * probe); linear in each argument, so only float rounding of
// the objective (~1e-6) separates them: eps 1e-2, tolerance 1e-2 relative.
TEST(CpuLinearGradient, MatchesFiniteDifferences) {
  auto backend = make_test_backend();
  const LinearGeometry geometry{3, 5, 4};
  auto input = random_values(15, 8);
  auto weight = random_values(20, 9);
  auto bias = random_values(4, 10);
  const auto probe = random_values(12, 11);
  std::vector<float> output(12);
  const auto objective = [&] {
    backend->linear_forward(geometry, input.data(), weight.data(), bias.data(), output.data());
    return weighted_sum(output, probe);
  };
  std::vector<float> grad_input(15), grad_weight(20), grad_bias(4);
  backend->linear_backward(geometry, input.data(), weight.data(), probe.data(), grad_input.data(),
                           grad_weight.data(), grad_bias.data());
  EXPECT_LT(gradient_check_error(input, grad_input, objective, 1e-2f), 1e-2);
  EXPECT_LT(gradient_check_error(weight, grad_weight, objective, 1e-2f), 1e-2);
  EXPECT_LT(gradient_check_error(bias, grad_bias, objective, 1e-2f), 1e-2);
}

}  // namespace
}  // namespace phalanx::testing
