// LossScaler: dynamic loss scaling for fp16 training (as torch.cuda.amp.GradScaler). The loss
// gradient is multiplied by scale() so that small gradients survive fp16's narrow range; after
// the all-reduce the summed gradients are checked: with an inf or NaN the update is skipped and the
// scale halves, otherwise the gradients are divided by the scale and the update runs, and after
// `growth_interval` good updates in a row the scale doubles. Scales are powers of two, so scaling
// and unscaling are exact in float: with no overflow, training is bitwise that of no scaling.
#pragma once

#include <cstdint>

#include "phalanx/backend/backend.hpp"

namespace phalanx::optim {

struct LossScalerState {
  double scale = 65536.0;          // 2^16, GradScaler's default
  std::int64_t good_steps = 0;     // finite updates since the scale last changed
  std::int64_t skipped_steps = 0;  // updates skipped for overflow, over the whole run
};

class LossScaler {
 public:
  static constexpr double growth_factor = 2.0;
  static constexpr double backoff_factor = 0.5;
  static constexpr std::int64_t growth_interval = 2000;

  // `initial_scale` is rounded to a power of two (exact scaling needs one).
  explicit LossScaler(double initial_scale);

  double scale() const { return state_.scale; }
  const LossScalerState& state() const { return state_; }
  void restore(const LossScalerState& state);

  // After the gradients of one update are summed: true (gradients unscaled in place) when the
  // optimizer may step, false when they overflowed and the update must be skipped.
  bool unscale_or_skip(backend::Backend& backend, float* gradients, std::int64_t count);
  // The same with the finite check made by the caller (the trainer's, agreed by all ranks).
  bool unscale_or_skip(bool finite, backend::Backend& backend, float* gradients, std::int64_t count);

 private:
  LossScalerState state_;
};

}  // namespace phalanx::optim
