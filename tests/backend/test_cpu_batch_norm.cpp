// Tests of the CPU backend's batch normalisation (NHWC, per-channel statistics) against a
// double-precision reference of PyTorch's semantics, including the running statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>

#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::BatchNormGeometry;

BatchNormGeometry make_geometry(int batch, int channels, int spatial) {
  BatchNormGeometry geometry;
  geometry.batch = batch;
  geometry.channels = channels;
  geometry.spatial = spatial;
  return geometry;
}

std::size_t element_count(const BatchNormGeometry& g) {
  return std::size_t(g.batch) * g.spatial * g.channels;
}

struct ReferenceForward {
  std::vector<double> output, mean, inverse_std, running_mean, running_variance;
};

// torch.nn.BatchNorm2d in training mode, in double.
ReferenceForward reference_forward(const BatchNormGeometry& g, const std::vector<float>& input,
                                   const std::vector<float>& gamma, const std::vector<float>& beta,
                                   const std::vector<float>& running_mean,
                                   const std::vector<float>& running_variance, double momentum) {
  const std::size_t rows = std::size_t(g.batch) * g.spatial;
  const int channels = g.channels;
  ReferenceForward result;
  result.output.resize(input.size());
  for (int c = 0; c < channels; ++c) {
    double sum = 0;
    for (std::size_t row = 0; row < rows; ++row) sum += input[row * channels + c];
    const double mean = sum / rows;
    double squares = 0;
    for (std::size_t row = 0; row < rows; ++row) squares += std::pow(input[row * channels + c] - mean, 2);
    const double variance = squares / rows;
    const double inverse_std = 1.0 / std::sqrt(variance + g.epsilon);
    for (std::size_t row = 0; row < rows; ++row)
      result.output[row * channels + c] =
          (input[row * channels + c] - mean) * inverse_std * gamma[c] + beta[c];
    result.mean.push_back(mean);
    result.inverse_std.push_back(inverse_std);
    result.running_mean.push_back((1 - momentum) * running_mean[c] + momentum * mean);
    result.running_variance.push_back((1 - momentum) * running_variance[c] +
                                      momentum * squares / (static_cast<double>(rows) - 1));
  }
  return result;
}

struct ReferenceBackward {
  std::vector<double> grad_input, grad_gamma, grad_beta;
};

ReferenceBackward reference_backward(const BatchNormGeometry& g, const std::vector<float>& input,
                                     const std::vector<float>& grad_output, const std::vector<float>& gamma,
                                     const std::vector<double>& mean,
                                     const std::vector<double>& inverse_std) {
  const std::size_t rows = std::size_t(g.batch) * g.spatial;
  const int channels = g.channels;
  ReferenceBackward result;
  result.grad_input.resize(input.size());
  for (int c = 0; c < channels; ++c) {
    double sum = 0, sum_normalized = 0;
    for (std::size_t row = 0; row < rows; ++row) {
      const double normalized = (input[row * channels + c] - mean[c]) * inverse_std[c];
      sum += grad_output[row * channels + c];
      sum_normalized += grad_output[row * channels + c] * normalized;
    }
    for (std::size_t row = 0; row < rows; ++row) {
      const double normalized = (input[row * channels + c] - mean[c]) * inverse_std[c];
      result.grad_input[row * channels + c] =
          gamma[c] * inverse_std[c] / rows *
          (rows * static_cast<double>(grad_output[row * channels + c]) - sum - normalized * sum_normalized);
    }
    result.grad_gamma.push_back(sum_normalized);
    result.grad_beta.push_back(sum);
  }
  return result;
}

struct BatchNormCase {
  std::string name;
  BatchNormGeometry geometry;
  float input_offset;  // added to every input: a large offset tests the variance for cancellation
  double tolerance;
};

// Test names and failure messages show the case's name, not its bytes.
void PrintTo(const BatchNormCase& test_case, std::ostream* stream) {
  *stream << test_case.name;
}

class CpuBatchNorm : public ::testing::TestWithParam<BatchNormCase> {};

// Tolerances: 1e-5 for inputs around 0 (observed ~1e-6). With an offset of 1000 the forward
// stays at ~2e-7, but backward reads the mean saved as float, one rounding (3e-5) away from
// the true mean, which grad_gamma inherits (observed 4e-5): 1e-4 there.
TEST_P(CpuBatchNorm, TrainingInferenceAndBackwardMatchReference) {
  const BatchNormCase& test_case = GetParam();
  const BatchNormGeometry& geometry = test_case.geometry;
  const int channels = geometry.channels;
  auto backend = make_test_backend();
  auto input = random_values(element_count(geometry), 1);
  for (float& value : input) value += test_case.input_offset;
  const auto gamma = random_values(channels, 2, 0.5f, 1.5f);
  const auto beta = random_values(channels, 3);
  const auto grad_output = random_values(element_count(geometry), 4);
  const auto initial_mean = random_values(channels, 5);
  const auto initial_variance = random_values(channels, 6, 0.5f, 1.5f);
  const float momentum = 0.1f;

  std::vector<float> running_mean = initial_mean, running_variance = initial_variance;
  std::vector<float> output(element_count(geometry), NAN), saved_mean(channels, NAN),
      saved_inverse_std(channels, NAN);
  backend->batch_norm_forward_training(geometry, input.data(), gamma.data(), beta.data(), output.data(),
                                       running_mean.data(), running_variance.data(), momentum,
                                       saved_mean.data(), saved_inverse_std.data());
  const ReferenceForward expected =
      reference_forward(geometry, input, gamma, beta, initial_mean, initial_variance, momentum);
  EXPECT_LT(max_error(output, expected.output), test_case.tolerance);
  EXPECT_LT(max_error(saved_mean, expected.mean), 1e-6);
  EXPECT_LT(max_error(saved_inverse_std, expected.inverse_std), 1e-5);
  EXPECT_LT(max_error(running_mean, expected.running_mean), 1e-6);
  EXPECT_LT(max_error(running_variance, expected.running_variance), 1e-5);

  std::vector<float> grad_input(element_count(geometry), NAN), grad_gamma(channels, NAN),
      grad_beta(channels, NAN);
  backend->batch_norm_backward(geometry, input.data(), grad_output.data(), gamma.data(), saved_mean.data(),
                               saved_inverse_std.data(), grad_input.data(), grad_gamma.data(),
                               grad_beta.data());
  const ReferenceBackward expected_backward =
      reference_backward(geometry, input, grad_output, gamma, expected.mean, expected.inverse_std);
  EXPECT_LT(max_error(grad_input, expected_backward.grad_input), test_case.tolerance);
  EXPECT_LT(max_error(grad_gamma, expected_backward.grad_gamma), test_case.tolerance);
  EXPECT_LT(max_error(grad_beta, expected_backward.grad_beta), 1e-5);

  // Inference normalises with the running statistics.
  std::vector<float> inference_output(element_count(geometry), NAN);
  backend->batch_norm_forward_inference(geometry, input.data(), gamma.data(), beta.data(),
                                        running_mean.data(), running_variance.data(),
                                        inference_output.data());
  std::vector<double> expected_inference(element_count(geometry));
  for (std::size_t index = 0; index < expected_inference.size(); ++index) {
    const int c = static_cast<int>(index % channels);
    expected_inference[index] = (input[index] - static_cast<double>(running_mean[c])) /
                                    std::sqrt(static_cast<double>(running_variance[c]) + geometry.epsilon) *
                                    gamma[c] +
                                beta[c];
  }
  EXPECT_LT(max_error(inference_output, expected_inference), test_case.tolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, CpuBatchNorm,
    ::testing::Values(BatchNormCase{"Convolutional", make_geometry(4, 5, 9), 0.0f, 1e-5},
                      BatchNormCase{"AfterLinear", make_geometry(16, 130, 1), 0.0f, 1e-5},
                      BatchNormCase{"ManyBlocks", make_geometry(8, 3, 28 * 28), 0.0f, 1e-5},
                      BatchNormCase{"LargeMean", make_geometry(8, 4, 100), 1000.0f, 1e-4}),
    [](const ::testing::TestParamInfo<BatchNormCase>& info) { return info.param.name; });

// Momentum semantics over several steps: running = (1 - m) * running + m * batch statistic.
TEST(CpuBatchNormRunningStats, FollowPyTorchOverSteps) {
  auto backend = make_test_backend();
  const auto geometry = make_geometry(3, 2, 4);
  std::vector<float> running_mean{0.0f, 0.0f}, running_variance{1.0f, 1.0f};
  std::vector<double> expected_mean{0.0, 0.0}, expected_variance{1.0, 1.0};
  const std::vector<float> gamma{1.0f, 1.0f}, beta{0.0f, 0.0f};
  std::vector<float> output(element_count(geometry)), saved_mean(2), saved_inverse_std(2);
  for (int step = 0; step < 3; ++step) {
    const auto input = random_values(element_count(geometry), 100 + step, -2.0f, 3.0f);
    const float momentum = 0.1f * (step + 1);
    const ReferenceForward expected = reference_forward(
        geometry, input, gamma, beta, std::vector<float>(expected_mean.begin(), expected_mean.end()),
        std::vector<float>(expected_variance.begin(), expected_variance.end()), momentum);
    expected_mean = expected.running_mean;
    expected_variance = expected.running_variance;
    backend->batch_norm_forward_training(geometry, input.data(), gamma.data(), beta.data(), output.data(),
                                         running_mean.data(), running_variance.data(), momentum,
                                         saved_mean.data(), saved_inverse_std.data());
  }
  EXPECT_LT(max_error(running_mean, expected_mean), 1e-6);
  EXPECT_LT(max_error(running_variance, expected_variance), 1e-6);
}

// Finite differences of sum(output * probe) for input, gamma and beta. Batch norm is smooth;
// eps 1e-2 leaves a truncation error around 1e-4 relative, float rounding of the objective
// about 1e-5; tolerance 1e-2 relative.
TEST(CpuBatchNormGradient, MatchesFiniteDifferences) {
  auto backend = make_test_backend();
  const auto geometry = make_geometry(3, 2, 4);
  auto input = random_values(element_count(geometry), 21);
  auto gamma = random_values(2, 22, 0.5f, 1.5f);
  auto beta = random_values(2, 23);
  const auto probe = random_values(element_count(geometry), 24);
  std::vector<float> running_mean(2, 0.0f), running_variance(2, 1.0f), saved_mean(2), saved_inverse_std(2);
  std::vector<float> output(element_count(geometry));
  const auto objective = [&] {
    backend->batch_norm_forward_training(geometry, input.data(), gamma.data(), beta.data(), output.data(),
                                         running_mean.data(), running_variance.data(), 0.1f,
                                         saved_mean.data(), saved_inverse_std.data());
    return weighted_sum(output, probe);
  };
  objective();
  std::vector<float> grad_input(element_count(geometry)), grad_gamma(2), grad_beta(2);
  backend->batch_norm_backward(geometry, input.data(), probe.data(), gamma.data(), saved_mean.data(),
                               saved_inverse_std.data(), grad_input.data(), grad_gamma.data(),
                               grad_beta.data());
  EXPECT_LT(gradient_check_error(input, grad_input, objective, 1e-2f), 1e-2);
  EXPECT_LT(gradient_check_error(gamma, grad_gamma, objective, 1e-2f), 1e-2);
  EXPECT_LT(gradient_check_error(beta, grad_beta, objective, 1e-2f), 1e-2);
}

}  // namespace
}  // namespace phalanx::testing
