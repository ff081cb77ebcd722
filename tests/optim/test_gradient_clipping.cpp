// train.clip_grad_norm against torch.nn.utils.clip_grad_norm_: the norm it returns and the clipped
// gradients, with a max_norm above the norm (nothing changes), below it, far below it, and with a
// frozen parameter (no gradient in torch: outside the norm, left as it is). The reference values
// come from clip_grad_norm_reference.py (torch), kept in clip_grad_norm_reference.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "optim/clip_grad_norm_reference.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/optim/gradient_clipping.hpp"

namespace phalanx::optim {
namespace {

struct Clipped {
  double norm = 0;
  std::vector<std::vector<float>> gradients;  // per parameter
};

Clipped clip_reference_gradients(const reference::ReferenceCase& reference_case) {
  auto backend = backend::make_cpu_backend(1);
  nn::ParameterRegistry registry;
  for (const auto& parameter : reference::parameters())
    registry.declare_parameter(
        parameter.name, Shape(std::vector<std::int64_t>(parameter.shape.begin(), parameter.shape.end())),
        nn::Initializer::Zeros, 1);
  registry.allocate(*backend, 0);
  for (const auto& prefix : reference_case.frozen) EXPECT_GT(registry.freeze(prefix), 0) << prefix;
  // The alignment gaps between parameters hold zeros, as in training.
  std::vector<float> gradients(static_cast<std::size_t>(registry.parameter_count()), 0.0f);
  const auto& infos = registry.parameters_info();
  for (std::size_t index = 0; index < infos.size(); ++index)
    std::copy(reference::parameters()[index].gradient.begin(), reference::parameters()[index].gradient.end(),
              gradients.begin() + infos[index].offset);
  backend->copy_from_host(registry.gradients().data(), gradients.data(), gradients.size() * sizeof(float));
  Clipped result;
  result.norm = clip_gradient_norm(*backend, registry, reference_case.max_norm);
  backend->copy_to_host(gradients.data(), registry.gradients().data(), gradients.size() * sizeof(float));
  for (const auto& info : infos)
    result.gradients.emplace_back(gradients.begin() + info.offset,
                                  gradients.begin() + info.offset + info.count);
  return result;
}

TEST(GradientClipping, EqualsTorchClipGradNorm) {
  ASSERT_EQ(reference::cases().size(), 4u);
  for (const auto& reference_case : reference::cases()) {
    SCOPED_TRACE(reference_case.name);
    const Clipped clipped = clip_reference_gradients(reference_case);
    // torch sums in fp32, phalanx in double: the norms agree to fp32's precision.
    EXPECT_NEAR(clipped.norm, reference_case.norm, 1e-6 * reference_case.norm);
    ASSERT_EQ(clipped.gradients.size(), reference_case.clipped.size());
    for (std::size_t parameter = 0; parameter < clipped.gradients.size(); ++parameter) {
      const auto& expected = reference_case.clipped[parameter];
      ASSERT_EQ(clipped.gradients[parameter].size(), expected.size());
      for (std::size_t element = 0; element < expected.size(); ++element)
        EXPECT_NEAR(clipped.gradients[parameter][element], expected[element],
                    2e-6 * std::fabs(expected[element]))
            << reference::parameters()[parameter].name << "[" << element << "]";
    }
  }
}

TEST(GradientClipping, ClippedGradientsHaveTheMaxNorm) {
  const auto& reference_case = reference::cases().front();
  const Clipped clipped = clip_reference_gradients(reference_case);
  ASSERT_GT(clipped.norm, reference_case.max_norm);  // the case clips
  double sum = 0;
  for (const auto& gradient : clipped.gradients)
    for (const float value : gradient) sum += static_cast<double>(value) * value;
  EXPECT_NEAR(std::sqrt(sum), reference_case.max_norm, 1e-6);
}

TEST(GradientClipping, NonFiniteGradientsAreLeftForTheSkip) {
  auto backend = backend::make_cpu_backend(1);
  nn::ParameterRegistry registry;
  registry.declare_parameter("a/weight", Shape{4}, nn::Initializer::Zeros, 1);
  registry.allocate(*backend, 0);
  std::vector<float> gradients(static_cast<std::size_t>(registry.parameter_count()), 0.0f);
  gradients[0] = 3.0f;
  gradients[1] = INFINITY;
  backend->copy_from_host(registry.gradients().data(), gradients.data(), gradients.size() * sizeof(float));
  EXPECT_TRUE(std::isinf(clip_gradient_norm(*backend, registry, 1.0)));
  std::vector<float> after(gradients.size());
  backend->copy_to_host(after.data(), registry.gradients().data(), after.size() * sizeof(float));
  EXPECT_EQ(after[0], 3.0f);  // not scaled by 0
}

TEST(GradientClipping, SumOfSquaresIsExactAndIndependentOfThreads) {
  // Past the parallel threshold and not a multiple of the block: values whose squares are exact
  // in double, so the sum is known exactly.
  const std::int64_t count = 100003;
  std::vector<float> values(static_cast<std::size_t>(count));
  for (std::int64_t index = 0; index < count; ++index)
    values[static_cast<std::size_t>(index)] = static_cast<float>((index % 7) - 3) * 0.5f;
  double expected = 0;
  for (const float value : values) expected += static_cast<double>(value) * value;
  const double one_thread = backend::make_cpu_backend(1)->sum_of_squares(count, values.data());
  const double two_threads = backend::make_cpu_backend(2)->sum_of_squares(count, values.data());
  EXPECT_EQ(one_thread, expected);
  EXPECT_EQ(two_threads, one_thread);
  EXPECT_EQ(backend::make_cpu_backend(1)->sum_of_squares(0, values.data()), 0.0);
}

}  // namespace
}  // namespace phalanx::optim
