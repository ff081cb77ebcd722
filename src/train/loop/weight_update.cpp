// The update and its skips (weight_update.hpp). The optimizer counts the updates it made (AdamW's
// bias correction), as GradScaler's do: skipped steps are not updates.
#include "loop/weight_update.hpp"

#include <cstdio>

#include "phalanx/optim/gradient_clipping.hpp"
#include "phalanx/train/nonfinite_stop.hpp"

namespace phalanx::train {

double WeightUpdate::learning_rate(const TrainingPosition& position) const {
  return setup_.schedule->learning_rate(position.epoch * setup_.steps_per_epoch + position.step_in_epoch);
}

void WeightUpdate::apply(bool gradients_finite, const TrainingPosition& position) {
  auto& registry = setup_.model->registry();
  float* gradients = registry.gradients().data();
  optim::LossScaler* scaler = setup_.loss_scaler.get();
  // At a scale of 1 or below the gradients themselves are not finite, and train.nonfinite decides.
  if (!gradients_finite && (!scaler || scaler->scale() <= 1.0)) on_nonfinite_gradients(position);
  bool update = gradients_finite;
  if (scaler)
    update = scaler->unscale_or_skip(gradients_finite, setup_.model->backend(), gradients, registry.parameter_count());
  else if (!gradients_finite)
    setup_.nonfinite_guard->count_skipped();
  const std::int64_t updates = position.global_step + 1 - skipped_updates();
  if (!update) return;
  // As torch's recipe: unscale, clip, step. Every rank holds the same summed gradients, so every
  // rank computes the same norm and clips alike.
  if (const auto& max_norm = setup_.config.train.clip_grad_norm) {
    gradient_norms_.add(optim::clip_gradient_norm(setup_.model->backend(), registry, *max_norm));
  }
  setup_.optimizer->step(registry, learning_rate(position), updates);
}

std::int64_t WeightUpdate::skipped_updates() const {
  return setup_.loss_scaler ? setup_.loss_scaler->state().skipped_steps : setup_.nonfinite_guard->skipped_steps();
}

std::string WeightUpdate::kept_checkpoint_note() const {
  const std::string latest = run_directory_.find_latest_checkpoint();
  return latest.empty() ? "no checkpoint was written before it" : "the last good checkpoint, " + latest + ", is kept";
}

void WeightUpdate::on_nonfinite_gradients(const TrainingPosition& position) {
  const std::int64_t step = position.global_step + 1;
  NonFiniteGuard& guard = *setup_.nonfinite_guard;
  const NonFiniteFinding finding = guard.describe_gradients(setup_.model->registry());
  char rate[64];
  std::snprintf(rate, sizeof(rate), "%g", learning_rate(position));
  const std::string what = "step " + std::to_string(step) +
                           ": the loss or its gradients are not finite; the first layer in backward order "
                           "with non-finite gradients: " +
                           describe(finding);
  if (guard.policy() == config::NonFinite::Stop)
    throw NonFiniteStop(what + "; stopped before the update (train.nonfinite: stop), learning rate " + rate +
                        " (optimizer.learning_rate too high?); " + kept_checkpoint_note());
  progress_.line(what + "; update skipped on every rank (train.nonfinite: skip), " +
                 std::to_string(skipped_updates() + 1) + " skipped so far");
}

void WeightUpdate::require_finite_state(const std::string& checkpoint_path, std::int64_t step) const {
  std::vector<const Tensor*> states;
  if (setup_.optimizer)
    for (const auto& name : setup_.optimizer->state_names()) states.push_back(&setup_.optimizer->state(name));
  const auto finding = setup_.nonfinite_guard->find_nonfinite_state(setup_.model->registry(), states);
  if (!finding) return;
  throw NonFiniteStop("step " + std::to_string(step) + ": the weights are not finite after the update (" +
                      describe(*finding) + "), so the checkpoint " + checkpoint_path +
                      " is not written (optimizer.learning_rate too high?); " + kept_checkpoint_note());
}

}  // namespace phalanx::train
