// Dynamic loss scaling. The decision uses the all-reduced gradients, which are the same bits on
// every rank, so every rank skips (or takes) the same updates without talking about it.
#include "phalanx/optim/loss_scaler.hpp"

#include <algorithm>
#include <cmath>

#include "phalanx/core/error.hpp"

namespace phalanx::optim {
namespace {

double power_of_two_at_most(double value) {
  int exponent = 0;
  std::frexp(value, &exponent);  // value = m * 2^exponent, m in [0.5, 1)
  return std::ldexp(1.0, exponent - 1);
}

// Scales and their reciprocals stay within float's normal range, so unscaling is exact.
constexpr double smallest_scale = 0x1p-126;
constexpr double largest_scale = 0x1p126;

}  // namespace

LossScaler::LossScaler(double initial_scale) {
  PHALANX_CHECK(initial_scale > 0 && std::isfinite(initial_scale), "loss scale ", initial_scale);
  state_.scale = std::clamp(power_of_two_at_most(initial_scale), smallest_scale, largest_scale);
}

void LossScaler::restore(const LossScalerState& state) {
  PHALANX_CHECK(
      state.scale > 0 && std::isfinite(state.scale) && state.scale == power_of_two_at_most(state.scale),
      "loss scale ", state.scale, " is not a power of two");
  state_ = state;
}

bool LossScaler::unscale_or_skip(backend::Backend& backend, float* gradients, std::int64_t count) {
  return unscale_or_skip(backend.all_finite(count, gradients), backend, gradients, count);
}

bool LossScaler::unscale_or_skip(bool finite, backend::Backend& backend, float* gradients,
                                 std::int64_t count) {
  if (!finite) {
    state_.scale = std::max(state_.scale * backoff_factor, smallest_scale);
    state_.good_steps = 0;
    ++state_.skipped_steps;
    return false;
  }
  backend.scale(count, static_cast<float>(1.0 / state_.scale), gradients);
  if (++state_.good_steps == growth_interval) {
    state_.scale = std::min(state_.scale * growth_factor, largest_scale);
    state_.good_steps = 0;
  }
  return true;
}

}  // namespace phalanx::optim
