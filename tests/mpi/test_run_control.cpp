// RunControl's agreement before the update, in a real MPI job: a flag that any one rank raises
// reaches every rank in the step's one collective. All ranks skip an update whose gradients are
// not finite on one rank only (its sums may differ from another's in the last bits), and all stop
// after a step for a handover that one rank asked for, except on the run's last step.
#include <gtest/gtest.h>

#include "phalanx/comm/communicator.hpp"
#include "control/run_control.hpp"
#include "phalanx/train/stop_request.hpp"
#include "support/test_support.hpp"

namespace phalanx::train {
namespace {

TEST(RunControl, OneRanksNonFiniteGradientsOrHandoverReachEveryRank) {
  const auto world = comm::Communicator::world();
  StopRequest::reset();
  const testing::ScratchDirectory scratch("run_control");
  RunControl control(world, scratch.path().string(), 300.0);

  StepAgreement agreement = control.agree_before_update(1, true, false);
  EXPECT_TRUE(agreement.gradients_finite);
  EXPECT_FALSE(agreement.stop);
  for (int culprit = 0; culprit < world.size(); ++culprit) {
    agreement = control.agree_before_update(2 + culprit, world.rank() != culprit, false);
    EXPECT_FALSE(agreement.gradients_finite) << "rank " << culprit << " alone saw non-finite sums";
    EXPECT_FALSE(agreement.stop);
  }

  const int asking = world.size() - 1;
  control.set_handover_check([&] { return world.rank() == asking; });
  agreement = control.agree_before_update(10, true, true);
  EXPECT_TRUE(agreement.gradients_finite);
  EXPECT_FALSE(agreement.stop) << "the last step finishes the run instead";
  EXPECT_FALSE(control.stopped_for_handover());
  agreement = control.agree_before_update(11, false, false);
  EXPECT_FALSE(agreement.gradients_finite);
  EXPECT_TRUE(agreement.stop) << "rank " << asking << " asked for a handover";
  EXPECT_TRUE(control.stopped_for_handover());
}

}  // namespace
}  // namespace phalanx::train
