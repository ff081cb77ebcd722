// The trainer's bookkeeping callbacks: progress, step events, epoch ends, checkpoints, stop
// signals and trace sampling, each deciding for itself when a step concerns it.
#include "reporting/bookkeeping_callbacks.hpp"

#include <algorithm>

namespace phalanx::train {

bool ProgressCallback::reads_device_results(const StepEnd& step) const {
  // The line shows the last step's loss when it is due (live lines between take what is there).
  return (step.batch.step + 1) % run_length_.log_every_steps == 0 || step.last_step;
}

void ProgressCallback::after_step(const StepEnd& step) {
  progress_.update(ProgressState{
      step.batch.epoch, run_length_.epochs, step.batch.step, run_length_.steps_per_epoch,
      static_cast<double>(run_length_.global_batch) / std::max(step.seconds, 1e-9), losses_.last_step_loss(),
      record_.mean_step_seconds() * static_cast<double>(run_length_.last_step - step.global_step)});
}

void StepMetricsCallback::after_step(const StepEnd& step) {
  if (!due(step)) return;
  run_control_.enter("step metrics", step.global_step, comm::StageKind::Collective);
  const RunningTotals& totals = losses_.totals();
  double interval[3] = {totals.interval_loss_sum, static_cast<double>(totals.interval_correct),
                        static_cast<double>(totals.interval_samples)};
  communicator_.allreduce_sum(interval, 3);
  nlohmann::json event = {
      {"event", "step"},
      {"step", step.global_step},
      {"epoch", step.batch.epoch},
      {"loss", interval[0] / interval[2]},
      {"accuracy", interval[1] / interval[2]},
      {"learning_rate", schedule_.learning_rate(step.schedule_step)},
      {"images_per_sec", static_cast<double>(global_batch_) / std::max(step.seconds, 1e-9)},
      {"time", wall_seconds_since_epoch() - start_wall_}};
  if (loss_scaler_) {
    event["loss_scale"] = loss_scaler_->scale();
    event["skipped_steps"] = loss_scaler_->state().skipped_steps;
  }
  // Without a loss scaler the updates train.nonfinite: skip left out (a scaler counts them above).
  if (!loss_scaler_ && nonfinite_guard_.policy() == config::NonFinite::Skip)
    event["skipped_steps"] = nonfinite_guard_.skipped_steps();
  if (gradient_norms_) {
    if (gradient_norms_->interval.updates > 0) event["grad_norm"] = gradient_norms_->interval.to_json();
    gradient_norms_->interval = {};
  }
  run_directory_.append_metrics(event);
  losses_.reset_interval();
}

void EpochEndCallback::after_step(const StepEnd& step) {
  evaluated_last_step_ = step.epoch_done;
  if (!step.epoch_done) return;
  actions_.end_of_epoch(step.batch.epoch, record_, losses_.totals());
  record_.start_epoch();
  losses_.reset_epoch();
  actions_.epoch_closed(losses_.totals());
}

void StopSignalCallback::after_step(const StepEnd& step) {
  if (!step.stop_requested) return;
  actions_.stop_on_signal(losses_.totals());
  stopped_ = true;
}

void TraceCallback::step_settled(const SettledStep& step) {
  if (!trace_.sampled(step.run_step)) return;
  const StageTimes& times = step.times;
  trace_.record({step.global_step, step.start, times.data_wait, times.host_to_device, times.forward,
                 times.backward, times.allreduce_wait, times.optimizer, times.sync_wait,
                 times.allreduce_total, step.batch.produce_begin, step.batch.produce_end, step.bucket_ready});
}

}  // namespace phalanx::train
