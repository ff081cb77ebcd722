// WeightUpdate: a step's update once the summed gradients are agreed finite or not: the optimizer
// step at the schedule's rate, or its skip. With dynamic loss scaling an inf or NaN is first an
// overflow of the scaled gradients (the scaler skips and halves the scale, as GradScaler does);
// otherwise train.nonfinite decides: stop, naming the first layer with non-finite gradients, or
// skip the update and count it. With train.clip_grad_norm the unscaled gradients of an update are
// clipped to that global norm before the optimizer runs, and the norm before clipping is recorded.
#pragma once

#include <cstdint>
#include <string>

#include "loop/gradient_norms.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/progress.hpp"
#include "phalanx/train/run_directory.hpp"
#include "setup/training_setup.hpp"

namespace phalanx::train {

class WeightUpdate {
 public:
  WeightUpdate(TrainingSetup& setup, Progress& progress, const RunDirectory& run_directory)
      : setup_(setup), progress_(progress), run_directory_(run_directory) {}

  // The update of the step after `position`; throws NonFiniteStop under train.nonfinite: stop.
  void apply(bool gradients_finite, const TrainingPosition& position);
  // Updates left out so far: the loss scaler's count, or the non-finite guard's.
  std::int64_t skipped_updates() const;
  // The norms before clipping, for the epoch and step events (which reset their part).
  GradientNormRecord& gradient_norms() { return gradient_norms_; }
  // Stops, naming the parameter, before a checkpoint of weights that are not finite is written
  // (every rank holds the same weights, so every rank stops here together).
  void require_finite_state(const std::string& checkpoint_path, std::int64_t step) const;

 private:
  void on_nonfinite_gradients(const TrainingPosition& position);
  double learning_rate(const TrainingPosition& position) const;
  // "the last good checkpoint, PATH, is kept" or that none was written yet.
  std::string kept_checkpoint_note() const;

  TrainingSetup& setup_;
  Progress& progress_;
  const RunDirectory& run_directory_;
  GradientNormRecord gradient_norms_;
};

}  // namespace phalanx::train
