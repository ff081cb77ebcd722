// StepCallbacks: the run's bookkeeping callbacks, called in the order the trainer added them
// (a checkpoint must see the sums after the interval's and the epoch's reset).
#include "loop/step_callback.hpp"

#include <algorithm>

namespace phalanx::train {

bool StepCallbacks::read_device_results(const StepEnd& step) const {
  return std::any_of(callbacks_.begin(), callbacks_.end(),
                     [&](const auto& callback) { return callback->reads_device_results(step); });
}

void StepCallbacks::step_settled(const SettledStep& step) {
  for (const auto& callback : callbacks_) callback->step_settled(step);
}

void StepCallbacks::after_step(const StepEnd& step) {
  for (const auto& callback : callbacks_) callback->after_step(step);
}

}  // namespace phalanx::train
