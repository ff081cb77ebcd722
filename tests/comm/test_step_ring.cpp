// StepRing, the ring of per-step slots NcclGradSync keeps its CUDA events in: which slot a step
// takes, which earlier steps stay readable, and when a new step reuses the slot of an older one
// (the step whose all-reduces begin_step waits for: two steps back, never the previous one).
#include <gtest/gtest.h>

#include <cstdint>

#include "phalanx/comm/step_ring.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::testing {
namespace {

// Each slot remembers the step that took it (0: none yet).
struct Occupant {
  std::int64_t step = 0;
};

TEST(StepRing, StepsTakeTurnsAndTheNewStepReusesTheSlotOfTheStepTwoBack) {
  comm::StepRing<Occupant, 2> ring;
  EXPECT_FALSE(ring.has_step(0));
  EXPECT_FALSE(ring.reuses_older_step());
  for (std::int64_t step = 1; step <= 7; ++step) {
    // From the third step on, the slot about to be taken holds the step two back, and it is the
    // oldest step in the ring (one back from the current one before begin_step).
    EXPECT_EQ(ring.reuses_older_step(), step >= 3) << "step " << step;
    if (ring.reuses_older_step()) {
      EXPECT_EQ(ring.step(1).step, step - 2) << "step " << step;
    }
    Occupant& slot = ring.begin_step();
    EXPECT_EQ(slot.step, step >= 3 ? step - 2 : 0) << "step " << step;
    slot.step = step;
    EXPECT_EQ(ring.steps_begun(), step);
    EXPECT_EQ(&ring.step(0), &slot);
    EXPECT_EQ(ring.step(0).step, step);
    // The previous step stays readable while the current one runs, in the other slot.
    EXPECT_EQ(ring.has_step(1), step >= 2);
    if (step >= 2) {
      EXPECT_EQ(ring.step(1).step, step - 1);
      EXPECT_NE(&ring.step(1), &slot);
    }
    EXPECT_FALSE(ring.has_step(2));
  }
}

TEST(StepRing, AStepNotInTheRingIsAnError) {
  comm::StepRing<Occupant, 2> ring;
  EXPECT_THROW(ring.step(0), Error);  // nothing begun
  ring.begin_step();
  EXPECT_THROW(ring.step(1), Error);  // only one step so far
  ring.begin_step();
  ring.begin_step();
  EXPECT_NO_THROW(ring.step(1));
  EXPECT_THROW(ring.step(2), Error);  // overwritten: the ring holds two steps
}

// A longer ring keeps more steps: with three slots, the slot reused is the one of three steps back.
TEST(StepRing, ALongerRingReusesTheOldestSlot) {
  comm::StepRing<Occupant, 3> ring;
  for (std::int64_t step = 1; step <= 8; ++step) {
    EXPECT_EQ(ring.reuses_older_step(), step >= 4);
    Occupant& slot = ring.begin_step();
    EXPECT_EQ(slot.step, step >= 4 ? step - 3 : 0);
    slot.step = step;
    for (std::size_t back = 0; back < 3; ++back)
      if (ring.has_step(back)) {
        EXPECT_EQ(ring.step(back).step, step - static_cast<std::int64_t>(back));
      }
  }
}

}  // namespace
}  // namespace phalanx::testing
