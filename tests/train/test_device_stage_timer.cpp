// DeviceStageTimer on the CPU backend, whose markers read the host clock: a step's stages are the
// times between its boundaries, the step before stays readable while the next one is marked, and
// there is no step before the first.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "loop/device_stage_timer.hpp"

namespace phalanx::train {
namespace {

void pause_milliseconds(int milliseconds) {
  std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
}

// Marks one step whose forward, backward and optimizer last at least the given milliseconds.
void mark_step(DeviceStageTimer& timer, int forward, int backward, int optimizer) {
  timer.mark(StageBoundary::Begin);
  pause_milliseconds(forward);
  timer.mark(StageBoundary::ForwardEnd);
  pause_milliseconds(backward);
  timer.mark(StageBoundary::BackwardEnd);
  pause_milliseconds(optimizer);
  timer.mark(StageBoundary::OptimizerEnd);
}

TEST(DeviceStageTimer, StagesAreTheTimesBetweenBoundariesAndThePreviousStepStaysReadable) {
  const auto backend = backend::make_cpu_backend(1);
  DeviceStageTimer timer(*backend);
  DeviceStageSeconds seconds;
  mark_step(timer, 30, 10, 20);
  EXPECT_FALSE(timer.read_previous(seconds)) << "the first step has no step before it";
  const DeviceStageSeconds first = timer.read_current();
  EXPECT_GE(first.forward, 0.029);
  EXPECT_GE(first.backward, 0.009);
  EXPECT_GE(first.optimizer, 0.019);
  EXPECT_LT(first.forward + first.backward + first.optimizer, 5.0);

  mark_step(timer, 10, 40, 10);
  ASSERT_TRUE(timer.read_previous(seconds));
  EXPECT_EQ(seconds.forward, first.forward) << "the previous step's markers were not reused";
  EXPECT_EQ(seconds.backward, first.backward);
  EXPECT_EQ(seconds.optimizer, first.optimizer);
  const DeviceStageSeconds second = timer.read_current();
  EXPECT_GE(second.backward, 0.039);
  EXPECT_GT(second.backward, second.forward);

  // A third step reuses the first one's markers; the second stays readable as the previous one.
  timer.mark(StageBoundary::Begin);
  ASSERT_TRUE(timer.read_previous(seconds));
  EXPECT_EQ(seconds.backward, second.backward);
}

TEST(DeviceStageTimer, ABoundaryBeforeTheFirstBeginIsAnError) {
  const auto backend = backend::make_cpu_backend(1);
  DeviceStageTimer timer(*backend);
  EXPECT_ANY_THROW(timer.mark(StageBoundary::ForwardEnd));
}

}  // namespace
}  // namespace phalanx::train
