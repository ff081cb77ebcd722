// TrainingLosses: running loss sums taken from the backend's deferred loss totals in step order,
// so a sum does not depend on when it was taken (GPU ranks take them only where they are read).
#include "loop/training_losses.hpp"

namespace phalanx::train {

TrainingLosses::TrainingLosses(backend::Backend& backend, int local_batch,
                               const std::optional<RunningTotals>& resumed)
    : backend_(backend),
      local_batch_(local_batch),
      taken_every_step_(backend.device_kind() != DeviceKind::Cuda),
      totals_(resumed.value_or(RunningTotals{})) {
  (void)backend_.take_deferred_loss_totals();
}

void TrainingLosses::take() {
  for (const backend::LossTotals& step : backend_.take_deferred_loss_totals()) {
    totals_.epoch_loss_sum += step.loss_sum;
    totals_.interval_loss_sum += step.loss_sum;
    totals_.interval_correct += step.correct;
    last_step_loss_ = step.loss_sum / local_batch_;
  }
}

void TrainingLosses::count_step() {
  totals_.epoch_samples += local_batch_;
  totals_.interval_samples += local_batch_;
}

void TrainingLosses::reset_interval() {
  totals_.interval_loss_sum = 0;
  totals_.interval_samples = 0;
  totals_.interval_correct = 0;
}

void TrainingLosses::reset_epoch() {
  totals_.epoch_loss_sum = 0;
  totals_.epoch_samples = 0;
}

}  // namespace phalanx::train
