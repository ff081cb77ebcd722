// PBT's decisions on planted results (pbt.hpp): the interval budgets, which trials exploit and whom
// they copy, how explore perturbs and resamples each kind of parameter, which keys keep the
// donor's values, the population limit, determinism by seed, and --resume's rebuilt state.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "phalanx/core/error.hpp"
#include "phalanx/sweep/pbt.hpp"

using namespace phalanx::sweep;
using phalanx::config::ParameterType;
using phalanx::config::SearchParameter;
using phalanx::config::SweepConfig;

namespace {

SweepConfig population(int trials, double resample = 0.0) {
  SweepConfig sweep;
  sweep.seed = 7;
  sweep.trials = trials;
  sweep.scheduler = phalanx::config::Scheduler::Pbt;
  sweep.max_budget = 4;
  sweep.pbt.population = trials;
  sweep.pbt.interval = 1;
  sweep.pbt.quantile = 0.25;
  sweep.pbt.perturbation = {0.8, 1.2};
  sweep.pbt.resample_probability = resample;
  sweep.space = {SearchParameter{"optimizer.learning_rate", ParameterType::LogUniform, {}, 1e-4, 1.0},
                 SearchParameter{"optimizer.momentum", ParameterType::Uniform, {}, 0.5, 0.99},
                 SearchParameter{"model.preset", ParameterType::Choice, {"a", "b", "c"}, 0, 0}};
  return sweep;
}

std::string value_of(const TrialParameters& parameters, const std::string& key) {
  for (const auto& [name, value] : parameters.values)
    if (name == key) return value;
  return "";
}

// Starts every trial of the population and records interval 0 with `metrics[trial]` in trial
// order: nothing is decided before the last result, then every trial's next step at once.
std::vector<std::optional<PbtStep>> first_interval(Pbt& pbt, const std::vector<double>& metrics) {
  for (std::size_t index = 0; index < metrics.size(); ++index) pbt.take(Job{-1, 0});
  std::vector<std::optional<PbtStep>> steps(metrics.size());
  for (std::size_t index = 0; index < metrics.size(); ++index) {
    const auto decided = pbt.record(static_cast<int>(index), 0, metrics[index]);
    EXPECT_EQ(decided.size(), index + 1 == metrics.size() ? metrics.size() : 0u);
    for (const auto& step : decided) steps[static_cast<std::size_t>(step.trial)] = step;
  }
  return steps;
}

}  // namespace

TEST(PbtTest, IntervalsSplitTheBudgetAndEndAtItsMaximum) {
  EXPECT_EQ(pbt_budgets(1, 4), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(pbt_budgets(1.5, 4), (std::vector<double>{1.5, 3, 4}));
  EXPECT_EQ(pbt_budgets(0.1, 0.3).size(), 3u);
  EXPECT_EQ(pbt_budgets(4, 4), (std::vector<double>{4}));
}

TEST(PbtTest, BottomQuantileCopiesATopQuantileTrialOfTheSameInterval) {
  const SweepConfig sweep = population(8);
  Pbt pbt(sweep);
  // Trial 3 best, then 5; trials 6 and 1 the worst two (floor(8 * 0.25) = 2).
  const auto steps = first_interval(pbt, {0.5, 0.1, 0.4, 0.9, 0.45, 0.8, 0.05, 0.6});
  for (int trial = 0; trial < 8; ++trial) {
    ASSERT_TRUE(steps[trial].has_value());
    EXPECT_EQ(steps[trial]->interval, 1);
  }
  // Decided together once all eight are in: the bottom two copy one of the top two.
  for (const int trial : {1, 6}) {
    ASSERT_TRUE(steps[trial]->exploited()) << trial;
    EXPECT_TRUE(steps[trial]->parent_trial == 3 || steps[trial]->parent_trial == 5) << trial;
    EXPECT_EQ(steps[trial]->parent_interval, 0);
  }
  // The others continue with their own values.
  for (const int trial : {0, 2, 3, 4, 5, 7}) EXPECT_FALSE(steps[trial]->exploited()) << trial;
  for (const int trial : {0, 2, 3, 4, 5, 7})
    EXPECT_EQ(steps[trial]->parameters.values, pbt.parameters(trial, 0).values);
  // Interval 1: everyone is ready, lowest interval first in trial order.
  const auto jobs = pbt.candidates();
  ASSERT_EQ(jobs.size(), 8u);
  for (int trial = 0; trial < 8; ++trial) EXPECT_EQ(jobs[trial], (Job{trial, 1}));
  // Interval 1, recorded in another order: still nothing is decided before the last result.
  for (int trial = 0; trial < 8; ++trial) pbt.take(Job{trial, 1});
  const std::vector<double> second = {0.6, 0.3, 0.7, 0.95, 0.5, 0.9, 0.65, 0.2};
  std::map<int, PbtStep> decided;
  for (const int trial : {7, 6, 5, 4, 3, 2, 1, 0})
    for (const auto& step : pbt.record(trial, 1, second[trial])) decided[step.trial] = step;
  ASSERT_EQ(decided.size(), 8u);
  for (const int trial : {7, 1}) {
    EXPECT_TRUE(decided[trial].exploited());
    EXPECT_TRUE(decided[trial].parent_trial == 3 || decided[trial].parent_trial == 5);
    EXPECT_EQ(decided[trial].parent_interval, 1);
  }
}

TEST(PbtTest, ExploreKeepsTheDonorsShapeKeysAndPerturbsTheOthersByAFactor) {
  const SweepConfig sweep = population(4);
  Pbt pbt(sweep);
  const auto steps = first_interval(pbt, {0.9, 0.5, 0.6, 0.1});
  ASSERT_TRUE(steps[3]->exploited());
  EXPECT_EQ(steps[3]->parent_trial, 0);
  const TrialParameters& donor = pbt.parameters(0, 0);
  const TrialParameters& explored = steps[3]->parameters;
  EXPECT_EQ(explored.seed, donor.seed);  // the donor's data order continues
  EXPECT_EQ(value_of(explored, "model.preset"), value_of(donor, "model.preset"));
  for (const std::string key : {"optimizer.learning_rate", "optimizer.momentum"}) {
    const double before = std::stod(value_of(donor, key)), after = std::stod(value_of(explored, key));
    const double high = key == "optimizer.momentum" ? 0.99 : 1.0;
    const bool scaled =
        std::abs(after - before * 0.8) < 1e-6 * before || std::abs(after - before * 1.2) < 1e-6 * before;
    EXPECT_TRUE(scaled || after == high) << key << ": " << before << " -> " << after;
  }
  // The explored values are what the trial trains interval 1 with.
  EXPECT_EQ(pbt.parameters(3, 1).values, explored.values);
  EXPECT_EQ(pbt.parameters(3, 1).assignments().back(), "seed=" + std::to_string(donor.seed));
}

TEST(PbtTest, PerturbationClipsToTheRangeAndMovesIntsAndChoices) {
  SweepConfig sweep = population(4);
  sweep.space = {SearchParameter{"optimizer.learning_rate", ParameterType::Uniform, {}, 0.1, 0.11},
                 SearchParameter{"optimizer.momentum", ParameterType::Choice, {"0.8", "0.9", "0.95"}, 0, 0},
                 SearchParameter{"train.label_smoothing", ParameterType::Uniform, {}, 0.0, 0.2}};
  // Many sweeps seeds: every perturbed value stays in range, a choice moves by one place.
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    sweep.seed = seed;
    Pbt pbt(sweep);
    const auto steps = first_interval(pbt, {0.9, 0.5, 0.6, 0.1});
    ASSERT_TRUE(steps[3]->exploited());
    const auto& donor = pbt.parameters(0, 0);
    const auto& explored = steps[3]->parameters;
    const double rate = std::stod(value_of(explored, "optimizer.learning_rate"));
    EXPECT_GE(rate, 0.1);
    EXPECT_LE(rate, 0.11);
    const std::vector<std::string> choices = {"0.8", "0.9", "0.95"};
    const auto before = std::find(choices.begin(), choices.end(), value_of(donor, "optimizer.momentum"));
    const auto after = std::find(choices.begin(), choices.end(), value_of(explored, "optimizer.momentum"));
    ASSERT_NE(after, choices.end());
    EXPECT_EQ(std::abs(after - before), 1);
  }
}

TEST(PbtTest, ResampleDrawsFromTheRangeWithItsProbability) {
  SweepConfig sweep = population(4, 1.0);
  sweep.space = {SearchParameter{"optimizer.learning_rate", ParameterType::Uniform, {}, 0.0, 1.0},
                 SearchParameter{"optimizer.momentum", ParameterType::Int, {}, 1, 1000}};
  int perturbed_like = 0;
  std::set<std::string> seen;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    sweep.seed = seed;
    Pbt pbt(sweep);
    const auto steps = first_interval(pbt, {0.9, 0.5, 0.6, 0.1});
    const double before = std::stod(value_of(pbt.parameters(0, 0), "optimizer.learning_rate"));
    const double after = std::stod(value_of(steps[3]->parameters, "optimizer.learning_rate"));
    perturbed_like += std::abs(after - before * 0.8) < 1e-7 || std::abs(after - before * 1.2) < 1e-7;
    seen.insert(value_of(steps[3]->parameters, "optimizer.momentum"));
  }
  // With probability 1 every value is a fresh draw: none is the donor's times a factor.
  EXPECT_EQ(perturbed_like, 0);
  EXPECT_GT(seen.size(), 25u);
  // With probability 0 every int is the donor's times a factor, rounded (moved by one at least).
  sweep.pbt.resample_probability = 0;
  sweep.seed = 3;
  Pbt pbt(sweep);
  const auto steps = first_interval(pbt, {0.9, 0.5, 0.6, 0.1});
  const long long before = std::stoll(value_of(pbt.parameters(0, 0), "optimizer.momentum"));
  const long long after = std::stoll(value_of(steps[3]->parameters, "optimizer.momentum"));
  const bool scaled = after == std::clamp<long long>(std::llround(before * 0.8), 1, 1000) ||
                      after == std::clamp<long long>(std::llround(before * 1.2), 1, 1000);
  EXPECT_TRUE(scaled || std::abs(after - before) == 1) << before << " -> " << after;
}

TEST(PbtTest, TheSameResultsGiveTheSameDecisionsAndAnotherSeedOthers) {
  auto run = [](std::uint64_t seed) {
    SweepConfig sweep = population(8, 0.25);
    sweep.seed = seed;
    Pbt pbt(sweep);
    std::vector<std::string> decisions;
    for (int trial = 0; trial < 8; ++trial) pbt.take(Job{-1, 0});
    for (int interval = 0; interval < 3; ++interval) {
      if (interval > 0)
        for (int trial = 0; trial < 8; ++trial) pbt.take(Job{trial, interval});
      for (int trial = 0; trial < 8; ++trial)
        for (const auto& step : pbt.record(trial, interval, 0.1 * ((trial * 3 + interval) % 8)))
          decisions.push_back(std::to_string(step.parent_trial) + ":" + step.parameters.assignments()[0]);
    }
    return decisions;
  };
  EXPECT_EQ(run(11), run(11));
  EXPECT_NE(run(11), run(12));
}

TEST(PbtTest, NewTrialsKeepThePopulationAndEveryTrialReachesTheLastInterval) {
  SweepConfig sweep = population(5);
  sweep.pbt.population = 2;
  sweep.max_budget = 2;
  Pbt pbt(sweep);
  int finished = 0;
  for (int round = 0; round < 100 && finished < 5; ++round) {
    const auto jobs = pbt.candidates();
    ASSERT_FALSE(jobs.empty());
    const Job job = pbt.take(jobs.front());
    // Never more than two unfinished trials.
    EXPECT_LE(pbt.started_trials() - finished, 2);
    pbt.record(job.trial, job.rung, 0.1 * job.trial);
    finished += job.rung == pbt.last_interval();
  }
  EXPECT_EQ(finished, 5);
  EXPECT_TRUE(pbt.candidates().empty());
  EXPECT_THROW(pbt.take(Job{-1, 0}), phalanx::Error);
}

TEST(PbtTest, AFailedTrialNoLongerHoldsThePopulationBack) {
  const SweepConfig sweep = population(3);
  Pbt pbt(sweep);
  for (int trial = 0; trial < 3; ++trial) pbt.take(Job{-1, 0});
  EXPECT_TRUE(pbt.record(0, 0, 0.5).empty());
  EXPECT_TRUE(pbt.record(2, 0, 0.7).empty());
  const auto decided = pbt.fail(1);
  ASSERT_EQ(decided.size(), 2u);
  EXPECT_EQ(decided[0].trial, 0);
  EXPECT_EQ(decided[1].trial, 2);
  EXPECT_EQ(pbt.candidates(), (std::vector<Job>{{0, 1}, {2, 1}}));
}

TEST(PbtTest, ResumeRebuildsDecisionsAndRedecidesOnlyTheUndecidedStep) {
  const SweepConfig sweep = population(4);
  Pbt original(sweep);
  const auto steps = first_interval(original, {0.9, 0.5, 0.6, 0.1});
  // As the database would hold it after a kill just before trial 3's decision was recorded, with
  // trial 0's interval 1 interrupted and trial 1's failed.
  RecordedProgress progress;
  progress.trials = {0, 1, 2, 3};
  progress.rung_results = {{0, 0, 0.9}, {1, 0, 0.5}, {2, 0, 0.6}, {3, 0, 0.1}};
  progress.promotions = {{0, 1}, {1, 1}};
  progress.interrupted = {{0, 1}};
  std::vector<PbtStep> lineage = {*steps[0], *steps[1], *steps[2]};
  Pbt resumed(sweep);
  const auto undecided = resumed.restore(progress, lineage);
  ASSERT_EQ(undecided.size(), 1u);
  EXPECT_EQ(undecided[0].trial, 3);
  EXPECT_EQ(undecided[0].parent_trial, steps[3]->parent_trial);
  EXPECT_EQ(undecided[0].parameters.values, steps[3]->parameters.values);
  EXPECT_EQ(resumed.parameters(3, 1).values, steps[3]->parameters.values);
  // Trial 0 is requeued by the coordinator, trial 1 failed: only 2 and 3 are offered.
  EXPECT_EQ(resumed.candidates(), (std::vector<Job>{{2, 1}, {3, 1}}));
}
