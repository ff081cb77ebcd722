// Trial parameters are pure functions of (sweep seed, trial id): the same on every rank and after
// a resume, inside their ranges, and a grid lists every combination once.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "phalanx/sweep/search_space.hpp"

using phalanx::config::SearchParameter;
using phalanx::config::SweepConfig;
using phalanx::sweep::sample_trial;
using phalanx::sweep::trial_count;
using phalanx::sweep::trial_seed;

namespace {
SweepConfig random_sweep() {
  SweepConfig sweep;
  sweep.seed = 11;
  sweep.trials = 50;
  SearchParameter rate{"optimizer.learning_rate", phalanx::config::ParameterType::LogUniform, {}, 1e-4, 1e-1};
  SearchParameter decay{"optimizer.weight_decay", phalanx::config::ParameterType::Uniform, {}, 0.0, 0.01};
  SearchParameter batch{"train.batch_size", phalanx::config::ParameterType::Choice, {"32", "64", "128"}, 0, 0};
  SearchParameter padding{"data.augment.random_crop_padding", phalanx::config::ParameterType::Int, {}, 0, 4};
  sweep.space = {rate, decay, batch, padding};
  return sweep;
}
}  // namespace

TEST(SearchSpace, RandomTrialsArePureFunctionsOfSeedAndTrialId) {
  const auto sweep = random_sweep();
  EXPECT_EQ(sample_trial(sweep, 7).assignments(), sample_trial(sweep, 7).assignments());
  EXPECT_NE(sample_trial(sweep, 7).assignments(), sample_trial(sweep, 8).assignments());
  auto other = sweep;
  other.seed = 12;
  EXPECT_NE(sample_trial(sweep, 7).assignments(), sample_trial(other, 7).assignments());
  EXPECT_EQ(trial_seed(sweep, 3), sample_trial(sweep, 3).seed);
  EXPECT_NE(trial_seed(sweep, 3), trial_seed(sweep, 4));
  const auto assignments = sample_trial(sweep, 3).assignments();
  EXPECT_EQ(assignments.back(), "seed=" + std::to_string(trial_seed(sweep, 3)));
}

TEST(SearchSpace, RandomValuesStayInTheirRangesAndCoverThem) {
  const auto sweep = random_sweep();
  std::set<std::string> batches, paddings;
  double lowest_rate = 1, highest_rate = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const auto values = sample_trial(sweep, trial).to_json();
    const double rate = values["optimizer.learning_rate"].get<double>();
    const double decay = values["optimizer.weight_decay"].get<double>();
    const int padding = values["data.augment.random_crop_padding"].get<int>();
    EXPECT_GE(rate, 1e-4);
    EXPECT_LE(rate, 1e-1);
    EXPECT_GE(decay, 0.0);
    EXPECT_LE(decay, 0.01);
    EXPECT_GE(padding, 0);
    EXPECT_LE(padding, 4);
    lowest_rate = std::min(lowest_rate, rate);
    highest_rate = std::max(highest_rate, rate);
    batches.insert(values["train.batch_size"].dump());
    paddings.insert(std::to_string(padding));
  }
  EXPECT_EQ(batches.size(), 3u);
  EXPECT_EQ(paddings.size(), 5u);  // both ends of an int range are reachable
  // Log-uniform: 200 draws span most of the three decades.
  EXPECT_LT(lowest_rate, 3e-4);
  EXPECT_GT(highest_rate, 3e-2);
}

TEST(SearchSpace, GridListsEveryCombinationOnceLastKeyFastest) {
  SweepConfig sweep;
  sweep.search = phalanx::config::Search::Grid;
  sweep.space = {SearchParameter{"train.batch_size", phalanx::config::ParameterType::Choice, {"32", "64"}, 0, 0},
                 SearchParameter{"data.augment.cutout", phalanx::config::ParameterType::Int, {}, 0, 2}};
  ASSERT_EQ(trial_count(sweep), 6);
  std::set<std::vector<std::string>> seen;
  for (int trial = 0; trial < 6; ++trial) {
    auto assignments = sample_trial(sweep, trial).assignments();
    assignments.pop_back();  // the seed
    seen.insert(assignments);
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(sample_trial(sweep, 0).assignments()[1], "data.augment.cutout=0");
  EXPECT_EQ(sample_trial(sweep, 1).assignments()[1], "data.augment.cutout=1");
  EXPECT_EQ(sample_trial(sweep, 3).assignments()[0], "train.batch_size=64");
  sweep.trials = 4;
  EXPECT_EQ(trial_count(sweep), 4);
}

// An int key spanning the whole 32-bit range is counted, never listed: sampling a grid point is
// as cheap for 2^32 values as for 3.
TEST(SearchSpace, GridOverAWideIntRangeIsNeverListed) {
  SweepConfig sweep;
  sweep.search = phalanx::config::Search::Grid;
  sweep.trials = 3;
  sweep.space = {SearchParameter{"train.batch_size", phalanx::config::ParameterType::Choice, {"32", "64"}, 0, 0},
                 SearchParameter{"data.augment.cutout", phalanx::config::ParameterType::Int, {}, -2147483648.0, 2147483647.0}};
  EXPECT_EQ(trial_count(sweep), 3);
  EXPECT_EQ(sample_trial(sweep, 0).assignments()[1], "data.augment.cutout=-2147483648");
  EXPECT_EQ(sample_trial(sweep, 2).assignments()[1], "data.augment.cutout=-2147483646");
  EXPECT_EQ(sample_trial(sweep, 0).assignments()[0], "train.batch_size=32");
}
