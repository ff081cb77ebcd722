// Tests of the CPU backend's activations (ActivationKind: relu6, sigmoid, hardsigmoid, silu,
// hardswish, gelu in both forms): forward and backward against torch's formulas evaluated in double
// on values that include the kinks (0, +-3, 6) and large magnitudes, central-difference gradient
// checks, in-place calls, and bf16 storage against the fp32 results rounded once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/activation_reference.hpp"
#include "backend/backend_test_support.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::testing {
namespace {

using backend::ActivationKind;
using backend::ComputePrecision;

// The output of kind(values) and the input gradient for grad_output `gradients`, as the backend
// computes them (backward handed only what the kind reads, as the nn layer hands it).
struct Results {
  std::vector<float> output, grad_input;
};

Results run(backend::Backend& backend, ActivationKind kind, const std::vector<float>& values,
            const std::vector<float>& gradients) {
  const auto count = static_cast<std::int64_t>(values.size());
  Results results{std::vector<float>(values.size(), NAN), std::vector<float>(values.size(), NAN)};
  backend.activation_forward(kind, count, values.data(), results.output.data());
  const bool reads_output = backend::backward_reads_output(kind);
  backend.activation_backward(kind, count, reads_output ? nullptr : values.data(),
                              reads_output ? results.output.data() : nullptr, gradients.data(),
                              results.grad_input.data());
  return results;
}

// oneDNN's exp, erf and tanh are polynomials within a few ulp of the exact values.
constexpr double relative_tolerance = 4e-6;

TEST(CpuActivations, MatchTorchFormulasAtKinksAndLargeMagnitudes) {
  auto backend = make_test_backend();
  const std::vector<float> values = activation_test_values();
  const std::vector<float> gradients = random_values(values.size(), 7, 0.5f, 2.0f);
  for (const ActivationKind kind : all_activation_kinds()) {
    const Results results = run(*backend, kind, values, gradients);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double x = values[i];
      const double expected = reference_forward(kind, x);
      EXPECT_LE(std::fabs(results.output[i] - expected),
                forward_tolerance(kind, x, expected, relative_tolerance))
          << activation_name(kind) << "(" << x << ") = " << results.output[i] << ", expected "
          << reference_forward(kind, x);
      if (!derivative_representable(kind, x)) continue;
      const double tolerance = relative_tolerance * std::fabs(gradients[i]);
      EXPECT_TRUE(gradient_matches(kind, x, gradients[i], results.grad_input[i], tolerance))
          << activation_name(kind) << "'(" << x << ") * " << gradients[i] << " = " << results.grad_input[i]
          << ", expected " << gradients[i] * reference_derivative(kind, x);
    }
  }
}

TEST(CpuActivations, GradientsMatchCentralDifferences) {
  auto backend = make_test_backend();
  // Away from the kinks, where central differences see one smooth piece.
  std::vector<float> input = away_from_kinks(random_values(257, 3, -7.0f, 7.0f));
  const std::vector<float> probe = random_values(input.size(), 4);
  for (const ActivationKind kind : all_activation_kinds()) {
    const Results results = run(*backend, kind, input, probe);
    std::vector<float> output(input.size());
    const auto objective = [&] {
      backend->activation_forward(kind, static_cast<std::int64_t>(input.size()), input.data(), output.data());
      return weighted_sum(output, probe);
    };
    EXPECT_LT(gradient_check_error(input, results.grad_input, objective, 1e-2f), 1e-2)
        << activation_name(kind);
  }
}

TEST(CpuActivations, InPlaceGivesTheSameBits) {
  auto backend = make_test_backend();
  const std::int64_t count = 40000;  // above the parallel threshold of the element-wise loops
  const std::vector<float> values = random_values(count, 5, -8.0f, 8.0f);
  const std::vector<float> gradients = random_values(count, 6);
  for (const ActivationKind kind : all_activation_kinds()) {
    const Results apart = run(*backend, kind, values, gradients);
    std::vector<float> in_place = values;
    backend->activation_forward(kind, count, in_place.data(), in_place.data());
    EXPECT_EQ(0, std::memcmp(in_place.data(), apart.output.data(), count * sizeof(float)))
        << activation_name(kind);
    std::vector<float> grad = gradients;
    const bool reads_output = backend::backward_reads_output(kind);
    backend->activation_backward(kind, count, reads_output ? nullptr : values.data(),
                                 reads_output ? apart.output.data() : nullptr, grad.data(), grad.data());
    EXPECT_EQ(0, std::memcmp(grad.data(), apart.grad_input.data(), count * sizeof(float)))
        << activation_name(kind);
  }
}

// bf16 storage: the values widened, computed in fp32, rounded once, so the bits are the fp32 op's
// result on the same (bf16) inputs rounded to nearest even.
TEST(CpuActivations, Bf16StorageIsTheFp32ResultRoundedOnce) {
  auto reference = make_test_backend();
  if (!reference->can_hold_activations(ComputePrecision::BFloat16, ComputePrecision::BFloat16))
    GTEST_SKIP() << "no oneDNN bf16 kernels here: bf16 activations are refused on this CPU";
  auto bf16 = make_test_backend();
  bf16->set_compute_precision(ComputePrecision::BFloat16);
  bf16->set_activation_precision(ComputePrecision::BFloat16);
  const std::int64_t count = 7 * 73 * 137;  // above the parallel threshold, and odd
  const std::vector<float> values = rounded_to_bf16(random_values(count, 8, -9.0f, 9.0f));
  const std::vector<float> gradients = rounded_to_bf16(random_values(count, 9));
  for (const ActivationKind kind : all_activation_kinds()) {
    const Results expected = run(*reference, kind, values, gradients);
    const std::vector<float> stored_values = stored_bf16(values), stored_gradients = stored_bf16(gradients);
    std::vector<float> output = stored_bf16(std::vector<float>(count, 0.0f));
    std::vector<float> grad_input = stored_bf16(std::vector<float>(count, 0.0f));
    bf16->activation_forward(kind, count, stored_values.data(), output.data());
    const bool reads_output = backend::backward_reads_output(kind);
    // The fp32 backward from the bf16 output where the kind reads its output: the same operand.
    const std::vector<float> rounded_output = rounded_to_bf16(expected.output);
    std::vector<float> expected_grad(count);
    reference->activation_backward(kind, count, reads_output ? nullptr : values.data(),
                                   reads_output ? rounded_output.data() : nullptr, gradients.data(),
                                   expected_grad.data());
    bf16->activation_backward(kind, count, reads_output ? nullptr : stored_values.data(),
                              reads_output ? output.data() : nullptr, stored_gradients.data(),
                              grad_input.data());
    EXPECT_TRUE(same_bits(read_bf16(output), rounded_output)) << activation_name(kind);
    EXPECT_TRUE(same_bits(read_bf16(grad_input), rounded_to_bf16(expected_grad))) << activation_name(kind);
    EXPECT_TRUE(second_half_untouched(output)) << activation_name(kind);
    EXPECT_TRUE(second_half_untouched(grad_input)) << activation_name(kind);
  }
}

TEST(CpuActivations, BackwardWithoutWhatTheKindReadsIsAnInternalError) {
  auto backend = make_test_backend();
  std::vector<float> values(8, 1.0f), grad(8, 1.0f);
  EXPECT_THROW(backend->activation_backward(ActivationKind::Sigmoid, 8, values.data(), nullptr, grad.data(),
                                            grad.data()),
               Error);
  EXPECT_THROW(
      backend->activation_backward(ActivationKind::Gelu, 8, nullptr, values.data(), grad.data(), grad.data()),
      Error);
}

}  // namespace
}  // namespace phalanx::testing
