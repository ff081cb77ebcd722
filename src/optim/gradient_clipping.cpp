// Clipping by global norm (gradient_clipping.hpp). The norm comes from the backend's
// sum_of_squares, on the device for GPU ranks, in double and in a fixed order; the factor is
// rounded to float once, as torch's clip coefficient is a float tensor.
#include "phalanx/optim/gradient_clipping.hpp"

#include <cmath>

namespace phalanx::optim {
namespace {

// Calls `visit(offset, count)` for each run of consecutive trainable parameters: one run over the
// whole buffer (its alignment gaps hold zeros) when nothing is frozen.
template <typename Visit>
void for_each_trainable_run(const nn::ParameterRegistry& registry, Visit&& visit) {
  if (!registry.any_frozen()) {
    visit(std::int64_t{0}, registry.parameter_count());
    return;
  }
  std::int64_t begin = -1, end = 0;
  for (const auto& info : registry.parameters_info()) {
    if (info.frozen) {
      if (begin >= 0) visit(begin, end - begin);
      begin = -1;
      continue;
    }
    if (begin < 0) begin = info.offset;
    end = info.offset + info.count;
  }
  if (begin >= 0) visit(begin, end - begin);
}

}  // namespace

double gradient_norm(backend::Backend& backend, nn::ParameterRegistry& registry) {
  const float* gradients = registry.gradients().data();
  double sum = 0;
  for_each_trainable_run(registry, [&](std::int64_t offset, std::int64_t count) {
    sum += backend.sum_of_squares(count, gradients + offset);
  });
  return std::sqrt(sum);
}

double clip_gradient_norm(backend::Backend& backend, nn::ParameterRegistry& registry, double max_norm) {
  const double norm = gradient_norm(backend, registry);
  const float factor = static_cast<float>(max_norm / (norm + clip_norm_epsilon));
  // torch multiplies by min(factor, 1) every time; a factor of 1 changes nothing, so skip the pass.
  if (!std::isfinite(norm) || !(factor < 1.0f)) return norm;
  float* gradients = registry.gradients().data();
  for_each_trainable_run(registry, [&](std::int64_t offset, std::int64_t count) {
    backend.scale(count, factor, gradients + offset);
  });
  return norm;
}

}  // namespace phalanx::optim
