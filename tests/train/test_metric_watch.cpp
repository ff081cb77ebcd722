// train.early_stop and checkpoint.keep_best on planted metric sequences: improvements by more than
// min_delta reset the count, the stop comes after `patience` evaluations without one, accuracies
// are maximised and losses minimised, a NaN never improves, and a restored state continues as the
// straight sequence does (a checkpoint of another metric is not taken).
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "phalanx/train/metric_watch.hpp"

namespace phalanx::train {
namespace {

// The epoch (1-based) at which the stop comes, or 0 when the sequence ends first.
int stop_epoch(EarlyStop& stop, const std::vector<double>& values) {
  for (std::size_t index = 0; index < values.size(); ++index)
    if (stop.observe(values[index], static_cast<std::int64_t>(index) + 1)) return static_cast<int>(index) + 1;
  return 0;
}

TEST(EarlyStop, StopsAfterPatienceEvaluationsWithoutImprovement) {
  EarlyStop stop("test_accuracy", 2, 0.0);
  EXPECT_EQ(stop_epoch(stop, {0.80, 0.85, 0.84, 0.86, 0.86, 0.85, 0.90}), 6);
  EXPECT_DOUBLE_EQ(stop.watch().state().best, 0.86);
  EXPECT_EQ(stop.watch().state().best_epoch, 4) << "an equal value is no improvement";
  EXPECT_EQ(stop.watch().state().evaluations_since_best, 2);
}

TEST(EarlyStop, MinDeltaAndLossDirection) {
  EarlyStop accuracy("test_accuracy", 2, 0.01);
  // 0.805 and 0.809 improve by less than 0.01: they count as no improvement.
  EXPECT_EQ(stop_epoch(accuracy, {0.80, 0.805, 0.809, 0.95}), 3);
  EarlyStop loss("ema_test_loss", 3, 0.0);
  EXPECT_EQ(stop_epoch(loss, {1.0, 0.9, 0.95, 0.8, 0.85, 0.81, 0.80, 0.79}), 7);
  EXPECT_DOUBLE_EQ(loss.watch().state().best, 0.8);
  EXPECT_EQ(loss.watch().state().best_epoch, 4);
  EarlyStop never("test_loss", 1, 0.0);
  EXPECT_EQ(stop_epoch(never, {3.0, 2.0, 1.0, 0.5}), 0);
}

TEST(MetricWatch, KeepBestImprovesOnlyOnStrictlyBetterFiniteValues) {
  MetricWatch best("test_top5_accuracy", 0.0);
  std::vector<bool> improved;
  for (const double value : {std::numeric_limits<double>::quiet_NaN(), 0.5, 0.7, 0.7, 0.6,
                             std::numeric_limits<double>::quiet_NaN(), 0.71})
    improved.push_back(best.observe(value, static_cast<std::int64_t>(improved.size()) + 1));
  EXPECT_EQ(improved, (std::vector<bool>{false, true, true, false, false, false, true}));
  EXPECT_EQ(best.state().best_epoch, 7);
}

TEST(MetricWatch, RestoredStateContinuesTheStraightSequence) {
  const std::vector<double> values = {0.5, 0.6, 0.55, 0.58, 0.61, 0.6, 0.59};
  EarlyStop straight("test_accuracy", 3, 0.0);
  const int straight_stop = stop_epoch(straight, values);
  ASSERT_EQ(straight_stop, 0);
  EarlyStop first("test_accuracy", 3, 0.0);
  for (std::size_t index = 0; index < 4; ++index)
    first.observe(values[index], static_cast<std::int64_t>(index) + 1);
  EarlyStop resumed("test_accuracy", 3, 0.0);
  resumed.watch().restore(first.watch().state());
  for (std::size_t index = 4; index < values.size(); ++index)
    EXPECT_FALSE(resumed.observe(values[index], static_cast<std::int64_t>(index) + 1));
  EXPECT_EQ(resumed.watch().state(), straight.watch().state());

  EarlyStop other("test_loss", 3, 0.0);
  other.watch().restore(first.watch().state());
  EXPECT_FALSE(other.watch().state().evaluated) << "a state of another metric is not taken";
}

}  // namespace
}  // namespace phalanx::train
