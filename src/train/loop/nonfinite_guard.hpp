// NonFiniteGuard: keeps a diverged run (a learning rate far too high) from training on, or from
// saving what it diverged to (train.nonfinite). Every step, after the all-reduce, each rank tests
// the summed gradients for inf and NaN and the ranks agree on the flags in the step's one small
// collective before the update (RunControl::agree_before_update), so all of them stop, or all skip
// the update, at the same step and never drift apart. A stop names the step and the first layer,
// in backward order, whose gradients were not finite.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "phalanx/train/nonfinite_stop.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/nn/parameter_registry.hpp"

namespace phalanx::train {

// Where the non-finite values of a flat buffer lie, by parameter.
struct NonFiniteFinding {
  std::string parameter;    // "<layer>/<param>" of the first one found (see find_nonfinite)
  std::int64_t values = 0;  // its values that are inf or NaN
  std::int64_t count = 0;   // its values in all
  int parameters = 0;       // parameters holding any, over the whole buffer
  bool any_nan = false;     // in the first one: NaN (else only infinities)
};

enum class ScanOrder { Forward, Backward };

// Scans `host` (a flat buffer of `parameters`' layout, in host memory) parameter by parameter in
// the model's order or in reverse (backward computes the last layer's gradients first, so the
// first non-finite one in backward order is where the infinities or NaNs entered). Empty when
// every value is finite.
std::optional<NonFiniteFinding> find_nonfinite(const std::vector<nn::ParameterInfo>& parameters,
                                               const float* host, ScanOrder order);

class NonFiniteGuard {
 public:
  NonFiniteGuard(config::NonFinite policy, backend::Backend& backend);

  config::NonFinite policy() const { return policy_; }

  // True when this rank's summed gradients are all finite. Not collective: the ranks agree on it
  // before the update (RunControl::agree_before_update). Waits for the device.
  bool local_gradients_finite(const float* gradients, std::int64_t count);

  // The gradients' non-finite values by parameter (copies them to the host: the failing path only).
  NonFiniteFinding describe_gradients(nn::ParameterRegistry& registry);

  // The first parameter (in the model's order) whose weights, batch-norm statistics or optimizer
  // state are not finite; empty when all are. Every rank holds the same weights, so every rank
  // gets the same answer without talking.
  std::optional<NonFiniteFinding> find_nonfinite_state(nn::ParameterRegistry& registry,
                                                       const std::vector<const Tensor*>& optimizer_states);

  // Updates skipped under `skip` when no loss scaler counts them (it counts its own).
  void count_skipped() { ++skipped_steps_; }
  std::int64_t skipped_steps() const { return skipped_steps_; }
  void restore_skipped(std::int64_t steps) { skipped_steps_ = steps; }

 private:
  std::vector<float> to_host(const Tensor& tensor, std::int64_t count);

  config::NonFinite policy_;
  backend::Backend& backend_;
  std::int64_t skipped_steps_ = 0;
};

// "fc/weight: 30 of 30 values NaN (and 1 more parameter)" for messages.
std::string describe(const NonFiniteFinding& finding);

}  // namespace phalanx::train
