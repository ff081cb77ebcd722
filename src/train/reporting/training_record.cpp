// TrainingRecord: the run's and the epoch's sums of step times and counts, kept apart from the
// loop so summary.json, the epoch events and the progress line read one record.
#include "reporting/training_record.hpp"

#include <algorithm>

namespace phalanx::train {

void TrainingRecord::step_settled(const SettledStep& step) {
  run_times.add(step.times);
  epoch_times.add(step.times);
}

void TrainingRecord::after_step(const StepEnd& step) {
  ++run_steps;
  ++epoch_steps;
  if (run_steps > warmup_steps) {
    measured_seconds += step.seconds;
    ++measured_steps;
    step_statistics.add(step.seconds);
  }
}

void TrainingRecord::start_epoch() {
  epoch_times = StageTimes{};
  epoch_steps = 0;
  epoch_clock.restart();
}

double TrainingRecord::mean_step_seconds() const {
  return run_times.total / static_cast<double>(std::max<std::int64_t>(run_steps, 1));
}

}  // namespace phalanx::train
