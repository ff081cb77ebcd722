// Tests of the CPU backend's optimizer steps against double-precision transcriptions of
// torch.optim.SGD (dampening 0) and torch.optim.AdamW, run over several steps.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <ostream>
#include <string>

#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::AdamWHyperparameters;
using backend::SgdHyperparameters;

// torch.optim.SGD.step for one parameter tensor; `first_step` mirrors PyTorch's buf = clone(g).
void reference_sgd(const SgdHyperparameters& h, std::vector<double>& parameters,
                   const std::vector<float>& gradients, std::vector<double>& buffer, bool first_step) {
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    double gradient = gradients[i] + h.weight_decay * parameters[i];
    if (h.momentum != 0) {
      buffer[i] = first_step ? gradient : h.momentum * buffer[i] + gradient;
      gradient = h.nesterov ? gradient + h.momentum * buffer[i] : buffer[i];
    }
    parameters[i] -= h.learning_rate * gradient;
  }
}

struct SgdCase {
  std::string name;
  SgdHyperparameters hyperparameters;
};

// Test names and failure messages show the case's name, not its bytes.
void PrintTo(const SgdCase& test_case, std::ostream* stream) {
  *stream << test_case.name;
}

class CpuSgd : public ::testing::TestWithParam<SgdCase> {};

// Four steps in float against double: a handful of roundings per step, 1e-6 relative.
TEST_P(CpuSgd, MatchesTorchOverSteps) {
  const SgdHyperparameters& hyperparameters = GetParam().hyperparameters;
  auto backend = make_test_backend();
  for (const std::int64_t count : {std::int64_t{1000}, std::int64_t{70001}}) {
    auto parameters = random_values(count, 1);
    std::vector<float> momentum_buffer(count, 0.0f);
    std::vector<double> expected(parameters.begin(), parameters.end()), expected_buffer(count, 0.0);
    for (int step = 0; step < 4; ++step) {
      const auto gradients = random_values(count, 10 + step);
      backend->sgd_step(count, hyperparameters, parameters.data(), gradients.data(),
                        hyperparameters.momentum != 0 ? momentum_buffer.data() : nullptr);
      reference_sgd(hyperparameters, expected, gradients, expected_buffer, step == 0);
    }
    EXPECT_LT(max_error(parameters, expected), 1e-6);
    if (hyperparameters.momentum != 0) {
      EXPECT_LT(max_error(momentum_buffer, expected_buffer), 1e-6);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Variants, CpuSgd,
    ::testing::Values(SgdCase{"Plain", SgdHyperparameters{0.1f, 0.0f, 0.0f, false}},
                      SgdCase{"WeightDecay", SgdHyperparameters{0.1f, 0.0f, 5e-2f, false}},
                      SgdCase{"Momentum", SgdHyperparameters{0.05f, 0.9f, 0.0f, false}},
                      SgdCase{"Nesterov", SgdHyperparameters{0.05f, 0.9f, 0.0f, true}},
                      SgdCase{"NesterovWeightDecay", SgdHyperparameters{0.05f, 0.9f, 1e-2f, true}}),
    [](const ::testing::TestParamInfo<SgdCase>& info) { return info.param.name; });

// torch.optim.AdamW.step (amsgrad off) in double.
void reference_adamw(const AdamWHyperparameters& h, std::vector<double>& parameters,
                     const std::vector<float>& gradients, std::vector<double>& first,
                     std::vector<double>& second) {
  const double correction1 = 1 - std::pow(static_cast<double>(h.beta1), h.step);
  const double correction2 = 1 - std::pow(static_cast<double>(h.beta2), h.step);
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    parameters[i] *= 1 - static_cast<double>(h.learning_rate) * h.weight_decay;
    first[i] = h.beta1 * first[i] + (1 - static_cast<double>(h.beta1)) * gradients[i];
    second[i] = h.beta2 * second[i] + (1 - static_cast<double>(h.beta2)) * gradients[i] * gradients[i];
    parameters[i] -=
        h.learning_rate * (first[i] / correction1) / (std::sqrt(second[i] / correction2) + h.epsilon);
  }
}

// Six steps; m/sqrt(v) divides rounded float moments, so 1e-5 relative to max(1, |p|).
TEST(CpuAdamW, MatchesTorchOverSteps) {
  auto backend = make_test_backend();
  const std::int64_t count = 70001;
  auto parameters = random_values(count, 2);
  std::vector<float> first(count, 0.0f), second(count, 0.0f);
  std::vector<double> expected(parameters.begin(), parameters.end()), expected_first(count, 0.0),
      expected_second(count, 0.0);
  AdamWHyperparameters hyperparameters;
  hyperparameters.learning_rate = 1e-2f;
  hyperparameters.weight_decay = 0.05f;
  for (int step = 1; step <= 6; ++step) {
    hyperparameters.step = step;
    const auto gradients = random_values(count, 20 + step, -0.1f, 0.1f);
    backend->adamw_step(count, hyperparameters, parameters.data(), gradients.data(), first.data(),
                        second.data());
    reference_adamw(hyperparameters, expected, gradients, expected_first, expected_second);
  }
  EXPECT_LT(max_error(parameters, expected), 1e-5);
  EXPECT_LT(max_error(first, expected_first), 1e-6);
  EXPECT_LT(max_error(second, expected_second), 1e-6);
}

bool is_subnormal(float value) {
  return std::fpclassify(value) == FP_SUBNORMAL;
}

// A dead unit's weights get zero gradients, so their moments decay by beta each step. Once below
// the smallest normal float they are stored as zero (x86 runs subnormal arithmetic through slow
// microcode), and no parameter moves by that: each stays what the unflushed recurrence gives.
TEST(CpuAdamW, MomentsThatDecayBelowTheNormalRangeAreStoredAsZero) {
  auto backend = make_test_backend();
  const std::int64_t count = 4099;  // past the parallel threshold, odd for the vector tail
  auto parameters = random_values(count, 3);
  std::vector<float> first(count), second(count, 1e-12f);
  for (std::int64_t i = 0; i < count; ++i) first[i] = (i % 2 == 0 ? 1.0f : -1.0f) * 1e-36f;
  const std::vector<float> gradients(count, 0.0f);
  std::vector<float> expected = parameters, expected_first = first, expected_second = second;
  AdamWHyperparameters hyperparameters;
  hyperparameters.learning_rate = 1e-2f;
  hyperparameters.weight_decay = 0.0f;  // the moments alone move the parameters
  int steps_flushed = 0;
  for (int step = 1; step <= 80; ++step) {
    hyperparameters.step = step;
    backend->adamw_step(count, hyperparameters, parameters.data(), gradients.data(), first.data(),
                        second.data());
    // The unflushed recurrence with a zero gradient: m = beta1 m, v = beta2 v exactly, and the
    // update in the backend's order of operations.
    const float step_size = static_cast<float>(hyperparameters.learning_rate /
                                               (1.0 - std::pow(double{hyperparameters.beta1}, step)));
    const float correction =
        static_cast<float>(std::sqrt(1.0 - std::pow(double{hyperparameters.beta2}, step)));
    for (std::int64_t i = 0; i < count; ++i) {
      expected_first[i] = hyperparameters.beta1 * expected_first[i];
      expected_second[i] = hyperparameters.beta2 * expected_second[i];
      const float denominator = std::sqrt(expected_second[i]) / correction + hyperparameters.epsilon;
      expected[i] = expected[i] - step_size * expected_first[i] / denominator;
    }
    if (is_subnormal(expected_first[0])) ++steps_flushed;
    for (std::int64_t i = 0; i < count; ++i) {
      ASSERT_FALSE(is_subnormal(first[i])) << "step " << step << " element " << i;
      if (is_subnormal(expected_first[i]))
        ASSERT_EQ(first[i], 0.0f) << "step " << step << " element " << i;
      else
        ASSERT_EQ(first[i], expected_first[i]) << "step " << step << " element " << i;
      ASSERT_EQ(second[i], expected_second[i]) << "step " << step << " element " << i;
      ASSERT_EQ(parameters[i], expected[i]) << "step " << step << " element " << i;
    }
  }
  // The recurrence spends the run's later steps in the subnormal range: the test saw the flush.
  EXPECT_GT(steps_flushed, 20);
}

// SGD's momentum buffer follows the same rule.
TEST(CpuSgd, AMomentumBufferThatDecaysBelowTheNormalRangeIsStoredAsZero) {
  auto backend = make_test_backend();
  const std::int64_t count = 4099;
  auto parameters = random_values(count, 4);
  std::vector<float> buffer(count, 1e-36f);
  const std::vector<float> gradients(count, 0.0f);
  SgdHyperparameters hyperparameters{0.05f, 0.9f, 0.0f, false};
  const std::vector<float> initial = parameters;
  float expected_buffer = 1e-36f;
  int steps_flushed = 0;
  for (int step = 1; step <= 80; ++step) {
    backend->sgd_step(count, hyperparameters, parameters.data(), gradients.data(), buffer.data());
    expected_buffer = hyperparameters.momentum * expected_buffer;
    if (is_subnormal(expected_buffer)) ++steps_flushed;
    for (std::int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(buffer[i], is_subnormal(expected_buffer) ? 0.0f : expected_buffer) << "step " << step;
      // lr * 1e-36 is below the last bit of every parameter here (random_values are O(1)).
      ASSERT_EQ(parameters[i], initial[i]) << "step " << step;
    }
  }
  EXPECT_GT(steps_flushed, 20);
}

}  // namespace
}  // namespace phalanx::testing
