// TrainingLosses: the rank's running loss sums of the epoch and of the log interval, fed from the
// loss totals the backend keeps where it computed them (on a GPU, until a wait is due anyway).
// They are added step by step in order, so the sums are the same bits whenever they are taken,
// and a checkpoint's RunningTotals continue them exactly. A step callback: it counts each step's
// samples.
#pragma once

#include <optional>

#include "phalanx/backend/backend.hpp"
#include "phalanx/train/running_totals.hpp"
#include "loop/step_callback.hpp"

namespace phalanx::train {

class TrainingLosses final : public StepCallback {
 public:
  // Starts from `resumed` (a checkpoint's totals of this rank) or from zero. Drops totals an
  // earlier run in this process left in the backend (a sweep trial that ended with an error).
  TrainingLosses(backend::Backend& backend, int local_batch, const std::optional<RunningTotals>& resumed);

  // A CPU rank's totals are host values already: they are taken after every step.
  bool reads_device_results(const StepEnd&) const override { return taken_every_step_; }
  void after_step(const StepEnd&) override { count_step(); }
  // Adds the totals of the steps since the last take (waits for the device where they are).
  void take();
  void count_step();  // the step's samples, in the epoch and the interval

  const RunningTotals& totals() const { return totals_; }
  double last_step_loss() const { return last_step_loss_; }  // mean over this rank's last taken step
  void reset_interval();
  void reset_epoch();

 private:
  backend::Backend& backend_;
  int local_batch_;
  bool taken_every_step_;
  RunningTotals totals_;
  double last_step_loss_ = 0;
};

}  // namespace phalanx::train
