// Learning-rate schedules: constant, step, cosine and one-cycle, each with optional linear
// warm-up (Goyal et al. 2017), matching the shapes of torch.optim.lr_scheduler's.
#include "phalanx/optim/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace phalanx::optim {

Schedule::Schedule(const config::ScheduleConfig& config, double base_learning_rate,
                   std::int64_t steps_per_epoch, std::int64_t total_steps)
    : config_(config),
      base_(base_learning_rate),
      steps_per_epoch_(std::max<std::int64_t>(steps_per_epoch, 1)),
      total_steps_(std::max<std::int64_t>(total_steps, 1)) {}

double Schedule::learning_rate(std::int64_t step) const {
  const double epoch = static_cast<double>(step) / static_cast<double>(steps_per_epoch_);
  const double progress = std::clamp(static_cast<double>(step) / static_cast<double>(total_steps_), 0.0, 1.0);
  double rate = base_;
  if (config_.type == config::ScheduleType::Step) {
    rate = base_ * std::pow(config_.gamma, std::floor(epoch / config_.step_epochs));
  } else if (config_.type == config::ScheduleType::Cosine) {
    const double floor_rate = base_ * config_.minimum_factor;
    rate = floor_rate + (base_ - floor_rate) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  } else if (config_.type == config::ScheduleType::OneCycle) {
    // torch OneCycleLR with cosine annealing: rise from max/div to max, then fall to
    // max/(div*final_div); base_ is the peak.
    const double start = base_ / config_.one_cycle_div_factor;
    const double end = start / config_.one_cycle_final_div_factor;
    const double peak = config_.one_cycle_peak_fraction;
    if (progress < peak) {
      const double phase = progress / peak;
      rate = base_ + (start - base_) * 0.5 * (1.0 + std::cos(std::numbers::pi * phase));
    } else {
      const double phase = (progress - peak) / std::max(1e-12, 1.0 - peak);
      rate = end + (base_ - end) * 0.5 * (1.0 + std::cos(std::numbers::pi * phase));
    }
    return rate;  // one-cycle has its own warm-up
  }
  const double warmup_steps = config_.warmup_epochs * static_cast<double>(steps_per_epoch_);
  if (warmup_steps > 0 && static_cast<double>(step) < warmup_steps) {
    const double fraction = static_cast<double>(step) / warmup_steps;
    rate *= config_.warmup_start_factor + (1.0 - config_.warmup_start_factor) * fraction;
  }
  return rate;
}

}  // namespace phalanx::optim
