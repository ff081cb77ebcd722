// Learning-rate schedules as pure functions of the step, so resuming needs only the step count.
#pragma once

#include <cstdint>

#include "phalanx/config/config.hpp"

namespace phalanx::optim {

class Schedule {
 public:
  // `total_steps` is the whole run's length (epochs * steps per epoch), independent of
  // train.max_steps, so stopping early and resuming follow the same curve.
  Schedule(const config::ScheduleConfig& config, double base_learning_rate, std::int64_t steps_per_epoch,
           std::int64_t total_steps);
  // Learning rate of the update with 0-based index `step`.
  double learning_rate(std::int64_t step) const;

 private:
  config::ScheduleConfig config_;
  double base_;
  std::int64_t steps_per_epoch_;
  std::int64_t total_steps_;
};

}  // namespace phalanx::optim
