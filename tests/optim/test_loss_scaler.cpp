// Dynamic loss scaling: GradScaler's rule step by step (skip and halve on inf/NaN, double after
// growth_interval good updates), exact unscaling, power-of-two scales, and state restore checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/optim/loss_scaler.hpp"

namespace phalanx::optim {
namespace {

class LossScalerTest : public ::testing::Test {
 protected:
  std::unique_ptr<backend::Backend> backend_ = backend::make_cpu_backend(1);
};

TEST_F(LossScalerTest, InitialScaleIsRoundedDownToAPowerOfTwo) {
  EXPECT_EQ(LossScaler(65536.0).scale(), 65536.0);
  EXPECT_EQ(LossScaler(100000.0).scale(), 65536.0);
  EXPECT_EQ(LossScaler(1.0).scale(), 1.0);
  EXPECT_EQ(LossScaler(0.3).scale(), 0.25);
  EXPECT_EQ(LossScaler(1e300).scale(), 0x1p126);  // clamped: 1/scale must stay a normal float
}

TEST_F(LossScalerTest, FiniteGradientsAreUnscaledExactly) {
  LossScaler scaler(1024.0);
  std::vector<float> gradients = {3.0f * 1024.0f, -0.125f * 1024.0f, 1e-30f * 1024.0f, 0.0f};
  const std::vector<float> expected = {3.0f, -0.125f, 1e-30f, 0.0f};
  ASSERT_TRUE(
      scaler.unscale_or_skip(*backend_, gradients.data(), static_cast<std::int64_t>(gradients.size())));
  EXPECT_EQ(gradients, expected);
  EXPECT_EQ(scaler.scale(), 1024.0);
  EXPECT_EQ(scaler.state().good_steps, 1);
  EXPECT_EQ(scaler.state().skipped_steps, 0);
}

TEST_F(LossScalerTest, OverflowSkipsTheUpdateHalvesTheScaleAndLeavesGradientsAlone) {
  for (const float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()}) {
    LossScaler scaler(65536.0);
    // Many elements (the backend's parallel path) with the bad one near the end.
    std::vector<float> gradients(100003, 1.0f);
    gradients[99999] = bad;
    ASSERT_TRUE(scaler.unscale_or_skip(*backend_, std::vector<float>(8, 2.0f).data(), 8));
    EXPECT_FALSE(
        scaler.unscale_or_skip(*backend_, gradients.data(), static_cast<std::int64_t>(gradients.size())))
        << bad;
    EXPECT_EQ(scaler.scale(), 32768.0);
    EXPECT_EQ(scaler.state().good_steps, 0) << "an overflow restarts the growth count";
    EXPECT_EQ(scaler.state().skipped_steps, 1);
    EXPECT_EQ(gradients[0], 1.0f) << "a skipped update does not touch the gradients";
  }
}

TEST_F(LossScalerTest, ScaleDoublesAfterGrowthIntervalGoodUpdates) {
  LossScaler scaler(8.0);
  std::vector<float> gradients(4, 8.0f);
  for (std::int64_t step = 1; step < LossScaler::growth_interval; ++step) {
    ASSERT_TRUE(scaler.unscale_or_skip(*backend_, gradients.data(), 4));
    ASSERT_EQ(scaler.scale(), 8.0) << "step " << step;
  }
  ASSERT_TRUE(scaler.unscale_or_skip(*backend_, gradients.data(), 4));
  EXPECT_EQ(scaler.scale(), 16.0);
  EXPECT_EQ(scaler.state().good_steps, 0);
}

TEST_F(LossScalerTest, RestoreTakesAStateAndRejectsAScaleThatIsNoPowerOfTwo) {
  LossScaler scaler(65536.0);
  scaler.restore(LossScalerState{512.0, 17, 3});
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_EQ(scaler.state().good_steps, 17);
  EXPECT_EQ(scaler.state().skipped_steps, 3);
  EXPECT_THROW(scaler.restore(LossScalerState{3.0, 0, 0}), Error);
  EXPECT_THROW(scaler.restore(LossScalerState{-2.0, 0, 0}), Error);
}

TEST_F(LossScalerTest, BackendFiniteCheckSeesEveryPosition) {
  std::vector<float> values(70001, -1.5f);
  EXPECT_TRUE(backend_->all_finite(static_cast<std::int64_t>(values.size()), values.data()));
  values[0] = std::numeric_limits<float>::max();
  EXPECT_TRUE(backend_->all_finite(static_cast<std::int64_t>(values.size()), values.data()));
  for (const std::size_t position : {std::size_t{0}, std::size_t{12345}, values.size() - 1}) {
    std::vector<float> copy = values;
    copy[position] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_FALSE(backend_->all_finite(static_cast<std::int64_t>(copy.size()), copy.data())) << position;
    copy[position] = -std::numeric_limits<float>::infinity();
    EXPECT_FALSE(backend_->all_finite(static_cast<std::int64_t>(copy.size()), copy.data())) << position;
  }
  EXPECT_TRUE(backend_->all_finite(0, nullptr));
}

}  // namespace
}  // namespace phalanx::optim
