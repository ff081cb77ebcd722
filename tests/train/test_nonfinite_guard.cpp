// The host-side scan behind train.nonfinite's message: which parameter, in backward or in forward
// order, first holds an inf or NaN, how many of its values do, and how many parameters do.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "loop/nonfinite_guard.hpp"

namespace phalanx::train {
namespace {

std::vector<nn::ParameterInfo> three_layers() {
  // conv/weight [0, 6), conv/bias [6, 8), fc/weight [8, 14): the flat layout of a registry.
  return {{"conv/weight", Shape{2, 3}, 0, 6, nn::Initializer::KaimingUniformWeight, 3},
          {"conv/bias", Shape{2}, 6, 2, nn::Initializer::FanInUniformBias, 3},
          {"fc/weight", Shape{3, 2}, 8, 6, nn::Initializer::KaimingUniformWeight, 2}};
}

TEST(NonFiniteScan, FiniteBuffersHaveNoFinding) {
  const std::vector<float> values(14, 0.5f);
  EXPECT_FALSE(find_nonfinite(three_layers(), values.data(), ScanOrder::Backward));
  EXPECT_FALSE(find_nonfinite(three_layers(), values.data(), ScanOrder::Forward));
}

TEST(NonFiniteScan, BackwardOrderNamesTheLayerClosestToTheLoss) {
  std::vector<float> values(14, 0.5f);
  values[1] = std::numeric_limits<float>::infinity();  // conv/weight: one inf
  values[9] = std::nanf("");                           // fc/weight: a NaN and an inf
  values[13] = -std::numeric_limits<float>::infinity();
  const auto backward = find_nonfinite(three_layers(), values.data(), ScanOrder::Backward);
  ASSERT_TRUE(backward);
  EXPECT_EQ(backward->parameter, "fc/weight");
  EXPECT_EQ(backward->values, 2);
  EXPECT_EQ(backward->count, 6);
  EXPECT_EQ(backward->parameters, 2);
  EXPECT_TRUE(backward->any_nan);
  EXPECT_EQ(describe(*backward), "fc/weight: 2 of 6 values NaN or infinite (and 1 more parameter)");
  const auto forward = find_nonfinite(three_layers(), values.data(), ScanOrder::Forward);
  ASSERT_TRUE(forward);
  EXPECT_EQ(forward->parameter, "conv/weight");
  EXPECT_FALSE(forward->any_nan);
  EXPECT_EQ(describe(*forward), "conv/weight: 1 of 6 values infinite (and 1 more parameter)");
}

TEST(NonFiniteScan, PolicyNames) {
  EXPECT_EQ(config::word_named<config::NonFinite>("stop"), config::NonFinite::Stop);
  EXPECT_EQ(config::word_named<config::NonFinite>("skip"), config::NonFinite::Skip);
  EXPECT_EQ(config::name_of(config::NonFinite::Skip), "skip");
  EXPECT_FALSE(config::word_named<config::NonFinite>("ignore"));
}

}  // namespace
}  // namespace phalanx::train
