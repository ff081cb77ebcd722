// TrainingRecord: what the run and its current epoch have measured so far: the settled stage
// times, the step counts, and the step times after warm-up (throughput, percentiles) that
// summary.json, the epoch events and the progress line report. A step callback, first in line.
#pragma once

#include <cstdint>

#include "phalanx/core/timer.hpp"
#include "loop/stage_times.hpp"
#include "loop/step_callback.hpp"
#include "reporting/step_time_statistics.hpp"

namespace phalanx::train {

class TrainingRecord final : public StepCallback {
 public:
  // The first steps build primitive caches: throughput and step-time percentiles skip them, and
  // the trace samples the steps after them.
  static constexpr int warmup_steps = 3;

  void step_settled(const SettledStep& step) override;
  void after_step(const StepEnd& step) override;
  // After an epoch's end is reported: the next epoch's sums start from zero.
  void start_epoch();
  double mean_step_seconds() const;  // over the settled steps of this run

  StageTimes run_times, epoch_times;
  std::int64_t run_steps = 0, epoch_steps = 0, measured_steps = 0;
  double measured_seconds = 0;
  StepTimeStatistics step_statistics;
  Stopwatch epoch_clock;
};

}  // namespace phalanx::train
