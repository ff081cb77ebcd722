// Learning-rate schedules against their closed forms (torch.optim.lr_scheduler shapes).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "phalanx/optim/schedule.hpp"

namespace phalanx::optim {
namespace {

TEST(Schedule, ConstantWithLinearWarmup) {
  config::ScheduleConfig config;
  config.warmup_epochs = 1;
  config.warmup_start_factor = 0.1;
  Schedule schedule(config, 0.5, 10, 100);
  EXPECT_DOUBLE_EQ(schedule.learning_rate(0), 0.05);
  EXPECT_NEAR(schedule.learning_rate(5), 0.5 * (0.1 + 0.9 * 0.5), 1e-12);
  EXPECT_DOUBLE_EQ(schedule.learning_rate(10), 0.5);
  EXPECT_DOUBLE_EQ(schedule.learning_rate(99), 0.5);
}

TEST(Schedule, StepDecaysEveryStepEpochs) {
  config::ScheduleConfig config;
  config.type = config::ScheduleType::Step;
  config.step_epochs = 2;
  config.gamma = 0.1;
  Schedule schedule(config, 1.0, 10, 100);
  EXPECT_DOUBLE_EQ(schedule.learning_rate(19), 1.0);
  EXPECT_NEAR(schedule.learning_rate(20), 0.1, 1e-12);
  EXPECT_NEAR(schedule.learning_rate(45), 0.01, 1e-12);
}

TEST(Schedule, CosineFallsFromBaseToFloor) {
  config::ScheduleConfig config;
  config.type = config::ScheduleType::Cosine;
  config.minimum_factor = 0.01;
  Schedule schedule(config, 2.0, 10, 100);
  EXPECT_DOUBLE_EQ(schedule.learning_rate(0), 2.0);
  EXPECT_NEAR(schedule.learning_rate(50), 0.02 + (2.0 - 0.02) * 0.5, 1e-12);
  EXPECT_NEAR(schedule.learning_rate(100), 0.02, 1e-12);
  for (int step = 1; step < 100; ++step)
    EXPECT_LT(schedule.learning_rate(step), schedule.learning_rate(step - 1));
}

TEST(Schedule, OneCycleRisesToPeakThenAnneals) {
  config::ScheduleConfig config;
  config.type = config::ScheduleType::OneCycle;
  config.one_cycle_peak_fraction = 0.25;
  config.one_cycle_div_factor = 25;
  config.one_cycle_final_div_factor = 1e4;
  Schedule schedule(config, 1.0, 10, 100);
  EXPECT_NEAR(schedule.learning_rate(0), 1.0 / 25, 1e-12);
  EXPECT_NEAR(schedule.learning_rate(25), 1.0, 1e-12);
  EXPECT_NEAR(schedule.learning_rate(100), 1.0 / 25 / 1e4, 1e-12);
  EXPECT_LT(schedule.learning_rate(10), schedule.learning_rate(20));
  EXPECT_GT(schedule.learning_rate(60), schedule.learning_rate(80));
}

}  // namespace
}  // namespace phalanx::optim
