// ASHA's promotion rule against sequences worked out by hand (docs/SWEEPS.md): the rung ladder,
// top-1/eta promotion with floor(n / eta), highest rung first, ties to the lower trial id, rungs
// too small to promote anyone, and the end of new trials.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "phalanx/sweep/asha.hpp"

using phalanx::sweep::Asha;
using phalanx::sweep::Job;

namespace {
std::vector<Job> jobs(std::initializer_list<Job> list) {
  return list;
}
const Job new_trial{-1, 0};
}  // namespace

TEST(Asha, RungBudgetsAreMinTimesEtaToThePowerK) {
  const Asha ladder(1, 9, 3, true, 10);
  ASSERT_EQ(ladder.rung_count(), 3);
  EXPECT_DOUBLE_EQ(ladder.budget(0), 1);
  EXPECT_DOUBLE_EQ(ladder.budget(1), 3);
  EXPECT_DOUBLE_EQ(ladder.budget(2), 9);
  // 1, 3, 9 fall short of 10: one more rung trains to budget.max.
  const Asha short_ladder(1, 10, 3, true, 10);
  ASSERT_EQ(short_ladder.rung_count(), 4);
  EXPECT_DOUBLE_EQ(short_ladder.budget(3), 10);
  const Asha halving(0.5, 4, 2, true, 10);
  ASSERT_EQ(halving.rung_count(), 4);
  EXPECT_DOUBLE_EQ(halving.budget(3), 4);
  EXPECT_EQ(Asha(2, 2, 3, true, 10).rung_count(), 1);
  const Asha full(1, 9, 3, true, 10, true);
  ASSERT_EQ(full.rung_count(), 1);
  EXPECT_DOUBLE_EQ(full.budget(0), 9);
}

TEST(Asha, PromotesTheTopThirdAsSoonAsTheRungHasThreeResults) {
  Asha asha(1, 9, 3, true, 9);
  EXPECT_EQ(asha.candidates(), jobs({new_trial}));
  for (int trial = 0; trial < 3; ++trial) EXPECT_EQ(asha.take(new_trial).trial, trial);
  asha.record(0, 0, 0.50);
  EXPECT_EQ(asha.candidates(), jobs({new_trial}));  // floor(1/3) = 0: nobody yet
  asha.record(1, 0, 0.70);
  EXPECT_EQ(asha.candidates(), jobs({new_trial}));  // floor(2/3) = 0
  asha.record(2, 0, 0.60);
  EXPECT_EQ(asha.candidates(), jobs({{1, 1}, new_trial}));  // floor(3/3) = 1: trial 1
  EXPECT_EQ(asha.take({1, 1}), (Job{1, 1}));
  EXPECT_EQ(asha.candidates(), jobs({new_trial}));  // promoted once only
  // Trial 3 beats everyone: with 4 results the top is still 1 trial, now trial 3.
  EXPECT_EQ(asha.take(new_trial).trial, 3);
  asha.record(3, 0, 0.90);
  EXPECT_EQ(asha.candidates(), jobs({{3, 1}, new_trial}));
  // Two more results: floor(6/3) = 2, the top two are 3 and 1 (1 already promoted).
  EXPECT_EQ(asha.take(new_trial).trial, 4);
  EXPECT_EQ(asha.take(new_trial).trial, 5);
  asha.record(4, 0, 0.10);
  asha.record(5, 0, 0.65);
  EXPECT_EQ(asha.candidates(), jobs({{3, 1}, new_trial}));
  asha.take({3, 1});
  // Rung 1 collects three results: its best goes to rung 2, before rung-0 promotions.
  asha.record(1, 1, 0.80);
  asha.record(3, 1, 0.85);
  EXPECT_EQ(asha.take(new_trial).trial, 6);
  EXPECT_EQ(asha.take(new_trial).trial, 7);
  EXPECT_EQ(asha.take(new_trial).trial, 8);
  asha.record(6, 0, 0.95);
  asha.record(7, 0, 0.20);
  asha.record(8, 0, 0.30);
  // Rung 0 now has 9 results: top 3 are 6 (0.95), 3 (0.90), 1 (0.70); 6 is new. No trials left.
  EXPECT_EQ(asha.candidates(), jobs({{6, 1}}));
  asha.take({6, 1});
  asha.record(6, 1, 0.82);
  // Rung 1: 3 results, top 1 is trial 3 (0.85): promoted to the top rung first.
  EXPECT_EQ(asha.candidates(), jobs({{3, 2}}));
  asha.take({3, 2});
  asha.record(3, 2, 0.88);
  EXPECT_TRUE(asha.candidates().empty());
}

TEST(Asha, TiesGoToTheLowerTrialId) {
  Asha asha(1, 3, 3, true, 6);
  for (int trial = 0; trial < 6; ++trial) asha.take(new_trial);
  asha.record(4, 0, 0.5);
  asha.record(2, 0, 0.5);
  asha.record(5, 0, 0.5);
  EXPECT_EQ(asha.candidates(), jobs({{2, 1}}));
  asha.record(0, 0, 0.5);
  asha.record(1, 0, 0.5);
  asha.record(3, 0, 0.5);
  // Six equal results: the top two are trials 0 and 1, best (lowest id) first.
  EXPECT_EQ(asha.candidates(), jobs({{0, 1}, {1, 1}}));
  const auto order = asha.ranking(0);
  ASSERT_EQ(order.size(), 6u);
  for (int index = 0; index < 6; ++index) EXPECT_EQ(order[static_cast<std::size_t>(index)].first, index);
}

TEST(Asha, MinimizeRanksLowValuesFirst) {
  Asha asha(1, 4, 2, false, 4);
  for (int trial = 0; trial < 4; ++trial) asha.take(new_trial);
  asha.record(0, 0, 0.9);
  asha.record(1, 0, 0.3);
  EXPECT_EQ(asha.candidates(), jobs({{1, 1}}));  // floor(2/2) = 1: trial 1 (0.3); no trials left
  asha.record(2, 0, 0.1);
  asha.record(3, 0, 0.5);
  EXPECT_EQ(asha.candidates(), jobs({{2, 1}, {1, 1}}));  // floor(4/2) = 2, best first
}

TEST(Asha, SmallRungsPromoteNobody) {
  Asha asha(1, 16, 4, true, 3);
  for (int trial = 0; trial < 3; ++trial) asha.take(new_trial);
  asha.record(0, 0, 0.1);
  asha.record(1, 0, 0.9);
  asha.record(2, 0, 0.5);
  // floor(3/4) = 0 and no trials left: the sweep ends with every trial at rung 0.
  EXPECT_TRUE(asha.candidates().empty());
}

TEST(Asha, RestoredStateGivesTheSameCandidates) {
  Asha live(1, 9, 3, true, 5);
  for (int trial = 0; trial < 4; ++trial) live.take(new_trial);
  live.record(0, 0, 0.4);
  live.record(1, 0, 0.8);
  live.record(2, 0, 0.6);
  live.take({1, 1});
  live.record(3, 0, 0.7);
  // As --resume rebuilds it from the trials, jobs and rung_results tables.
  Asha restored(1, 9, 3, true, 5);
  for (int trial = 0; trial < 4; ++trial) restored.restore_started(trial);
  restored.restore_promoted(1, 1);
  restored.record(0, 0, 0.4);
  restored.record(1, 0, 0.8);
  restored.record(2, 0, 0.6);
  restored.record(3, 0, 0.7);
  EXPECT_EQ(restored.candidates(), live.candidates());
  EXPECT_EQ(restored.take(new_trial).trial, 4);
  EXPECT_EQ(live.take(new_trial).trial, 4);
}

// ASHA's stopping rule (AshaRule::Stopping, as Optuna's SuccessiveHalvingPruner decides): each
// result is judged once, against the results its rung holds when it arrives.
TEST(AshaStoppingRule, DecidesEachResultAgainstTheRungAsItArrives) {
  Asha asha(1, 9, 3, true, 9, false, phalanx::config::AshaRule::Stopping);
  for (int trial = 0; trial < 6; ++trial) asha.take(new_trial);
  asha.record(0, 0, 0.50);  // n = 1: the top max(1, 0) = 1 is itself, it goes on
  EXPECT_EQ(asha.candidates(), jobs({{0, 1}, new_trial}));
  EXPECT_TRUE(asha.goes_on(0, 0));
  asha.record(1, 0, 0.40);  // n = 2: top 1 is trial 0, trial 1 stops
  EXPECT_FALSE(asha.goes_on(1, 0));
  asha.record(2, 0, 0.70);  // n = 3: top 1 is itself
  asha.record(3, 0, 0.45);  // n = 4: top 1 is trial 2
  asha.record(4, 0, 0.60);  // n = 5: top 1 is trial 2
  asha.record(5, 0, 0.65);  // n = 6: top 2 are trials 2 and 5
  // Trial 0 is no longer in the rung's top third (2 and 5 are), but its decision stands; the
  // candidates come best first.
  EXPECT_EQ(asha.candidates(), jobs({{2, 1}, {5, 1}, {0, 1}, new_trial}));
  for (const int stopped : {1, 3, 4}) EXPECT_FALSE(asha.goes_on(stopped, 0)) << stopped;
  // The promotion rule on the same results hands out only the top floor(6 / 3) = 2.
  Asha promotion(1, 9, 3, true, 9);
  for (int trial = 0; trial < 6; ++trial) promotion.take(new_trial);
  for (const auto& [trial, metric] : asha.ranking(0)) promotion.record(trial, 0, metric);
  EXPECT_EQ(promotion.candidates(), jobs({{2, 1}, {5, 1}, new_trial}));
  EXPECT_FALSE(promotion.goes_on(0, 0));

  // Taken once; still on its way (goes_on) after it is taken.
  EXPECT_EQ(asha.take({0, 1}), (Job{0, 1}));
  EXPECT_TRUE(asha.goes_on(0, 0));
  EXPECT_EQ(asha.candidates(), jobs({{2, 1}, {5, 1}, new_trial}));
  // Rung 1: the first result goes on, the top rung decides nothing.
  asha.record(0, 1, 0.80);
  EXPECT_TRUE(asha.goes_on(0, 1));
  asha.take({0, 2});
  asha.record(0, 2, 0.85);
  EXPECT_FALSE(asha.goes_on(0, 2));
}

TEST(AshaStoppingRule, MinimizeAndTiesGoToTheLowerTrialId) {
  Asha asha(1, 4, 2, false, 4, false, phalanx::config::AshaRule::Stopping);
  for (int trial = 0; trial < 4; ++trial) asha.take(new_trial);
  asha.record(3, 0, 0.5);  // n = 1: goes on
  asha.record(1, 0, 0.5);  // n = 2: top 1; the tie goes to trial 1, which goes on
  asha.record(2, 0, 0.7);  // n = 3: top 1 is trial 1; 0.7 is worse when minimizing
  asha.record(0, 0, 0.1);  // n = 4: top 2 are trials 0 and 1
  EXPECT_EQ(asha.candidates(), jobs({{0, 1}, {1, 1}, {3, 1}}));
  EXPECT_FALSE(asha.goes_on(2, 0));
}

TEST(AshaStoppingRule, ReplayedInTheRecordedOrderGivesTheSameCandidates) {
  Asha live(1, 9, 3, true, 6, false, phalanx::config::AshaRule::Stopping);
  for (int trial = 0; trial < 5; ++trial) live.take(new_trial);
  const std::vector<std::pair<int, double>> arrivals = {{3, 0.5}, {0, 0.4}, {4, 0.6}, {1, 0.55}, {2, 0.3}};
  for (const auto& [trial, metric] : arrivals) live.record(trial, 0, metric);
  live.take({4, 1});
  // As --resume rebuilds it: the rung_results table in the order the rows were written.
  Asha restored(1, 9, 3, true, 6, false, phalanx::config::AshaRule::Stopping);
  for (int trial = 0; trial < 5; ++trial) restored.restore_started(trial);
  restored.restore_promoted(4, 1);
  for (const auto& [trial, metric] : arrivals) restored.record(trial, 0, metric);
  EXPECT_EQ(restored.candidates(), live.candidates());
  EXPECT_EQ(restored.candidates(), jobs({{3, 1}, new_trial}));
  // In trial order instead, trial 3 (0.5) would have come after trial 1 (0.55) and stopped: the
  // order is part of the state, which is why the results are replayed as recorded.
  Asha reordered(1, 9, 3, true, 6, false, phalanx::config::AshaRule::Stopping);
  for (int trial = 0; trial < 5; ++trial) reordered.restore_started(trial);
  reordered.restore_promoted(4, 1);
  for (const int trial : {0, 1, 2, 3, 4})
    for (const auto& [arrived, metric] : arrivals)
      if (arrived == trial) reordered.record(trial, 0, metric);
  EXPECT_NE(reordered.candidates(), live.candidates());
}

// Brackets (asynchronous Hyperband): trial ids dealt in Hyperband's proportions, worked out by
// hand from its n = ceil((top + 1) / (s + 1) * eta^s): 9, 5 and 3 shares on rungs 1, 3, 9.
TEST(AshaBrackets, DealsTrialIdsInHyperbandsProportions) {
  const Asha asha(1, 9, 3, true, 17, false, phalanx::config::AshaRule::Promotion, 3);
  EXPECT_EQ(asha.brackets(), 3);
  std::vector<int> first_rungs;
  for (int trial = 0; trial < 17; ++trial) first_rungs.push_back(asha.first_rung(trial));
  EXPECT_EQ(first_rungs, (std::vector<int>{0, 1, 0, 2, 0, 1, 0, 2, 0, 1, 0, 1, 0, 2, 0, 1, 0}));
  // Every prefix is within one trial of its share.
  std::vector<int> dealt(3, 0);
  for (int trial = 0; trial < 17; ++trial) {
    ++dealt[static_cast<std::size_t>(first_rungs[static_cast<std::size_t>(trial)])];
    const double shares[3] = {9.0 / 17, 5.0 / 17, 3.0 / 17};
    for (int bracket = 0; bracket < 3; ++bracket)
      EXPECT_LT(std::abs(dealt[static_cast<std::size_t>(bracket)] - (trial + 1) * shares[bracket]), 1.0)
          << "bracket " << bracket << " after trial " << trial;
  }
  // Two brackets: the most aggressive two (9 and 5 shares); one bracket: everyone at rung 0.
  const Asha two(1, 9, 3, true, 6, false, phalanx::config::AshaRule::Promotion, 2);
  std::vector<int> two_rungs;
  for (int trial = 0; trial < 6; ++trial) two_rungs.push_back(two.first_rung(trial));
  EXPECT_EQ(two_rungs, (std::vector<int>{0, 1, 0, 0, 1, 0}));
  const Asha one(1, 9, 3, true, 6);
  for (int trial = 0; trial < 6; ++trial) EXPECT_EQ(one.first_rung(trial), 0);
}

// A new trial starts at its bracket's rung and trains from scratch there; promotions rank a trial
// only against the trials of its own bracket, and a rung's promotions are offered best first.
TEST(AshaBrackets, NewTrialsStartAtTheirBracketAndPromoteWithinIt) {
  Asha asha(1, 9, 3, true, 6, false, phalanx::config::AshaRule::Promotion, 2);  // brackets 0 1 0 0 1 0
  EXPECT_EQ(asha.candidates(), jobs({new_trial}));
  EXPECT_EQ(asha.take(new_trial), (Job{0, 0}));
  EXPECT_EQ(asha.candidates(), jobs({{-1, 1}}));  // trial 1 will start at rung 1
  EXPECT_EQ(asha.take(new_trial), (Job{1, 1}));
  EXPECT_TRUE(asha.starts_trial({1, 1}));
  EXPECT_FALSE(asha.starts_trial({0, 1}));
  EXPECT_TRUE(asha.starts_trial({-1, 1}));
  for (int trial = 2; trial <= 4; ++trial) asha.take(new_trial);  // 2, 3 at rung 0; 4 at rung 1
  asha.record(0, 0, 0.5);
  asha.record(2, 0, 0.6);
  // Rung 1 holds trials 1 and 4 (bracket 1): bracket 0's three rung-0 results are its own rung.
  asha.record(1, 1, 0.9);
  asha.record(4, 1, 0.8);
  EXPECT_EQ(asha.candidates(),
            jobs({new_trial}));  // bracket 0 has 2 rung-0 results, bracket 1 has 2 at rung 1
  asha.record(3, 0, 0.7);
  EXPECT_EQ(asha.candidates(), jobs({{3, 1}, new_trial}));  // bracket 0's best of 3; not trials 1, 4
  EXPECT_EQ(asha.take({3, 1}), (Job{3, 1}));
  // Trial 3 at rung 1 (0.95) is bracket 0's only result there: it does not count for bracket 1,
  // which still has two results at rung 1 and promotes nobody.
  asha.record(3, 1, 0.95);
  EXPECT_EQ(asha.candidates(), jobs({new_trial}));
  EXPECT_EQ(asha.ranking(1).front(), (std::pair<int, double>{3, 0.95}));  // the rung's own ranking has all
  EXPECT_EQ(asha.take(new_trial), (Job{5, 0}));
  EXPECT_EQ(asha.candidates(), jobs({}));
  EXPECT_THROW(asha.take({1, 1}), std::exception) << "a trial's first rung is no promotion";
}

// --resume rebuilds the brackets from the trial ids alone: a trial's first job (at its bracket's
// rung, recorded in the jobs table like a promotion) is not taken for one.
TEST(AshaBrackets, RestoredStateGivesTheSameCandidates) {
  Asha live(1, 9, 3, true, 9, false, phalanx::config::AshaRule::Promotion, 3);
  std::vector<Job> taken;
  for (int trial = 0; trial < 8; ++trial) taken.push_back(live.take(new_trial));
  const std::vector<std::tuple<int, int, double>> results = {{0, 0, 0.3}, {1, 1, 0.8}, {2, 0, 0.5},
                                                             {4, 0, 0.4}, {5, 1, 0.7}, {6, 0, 0.2},
                                                             {3, 2, 0.9}, {7, 2, 0.85}};
  for (const auto& [trial, rung, metric] : results) live.record(trial, rung, metric);
  Asha restored(1, 9, 3, true, 9, false, phalanx::config::AshaRule::Promotion, 3);
  for (const Job& job : taken) {
    restored.restore_started(job.trial);
    restored.restore_promoted(job.trial, job.rung);
  }
  for (const auto& [trial, rung, metric] : results) restored.record(trial, rung, metric);
  EXPECT_EQ(restored.candidates(), live.candidates());
  // Bracket 0 (trials 0, 2, 4, 6) promotes its best, trial 2; bracket 1 has 2 results at rung 1.
  EXPECT_EQ(live.candidates(), jobs({{2, 1}, new_trial}));  // trial 8 is bracket 0's
  EXPECT_FALSE(restored.goes_on(1, 0));
}

// The stopping rule decides each result against the earlier results of its own bracket.
TEST(AshaBrackets, StoppingRuleJudgesWithinTheBracket) {
  Asha asha(1, 9, 3, true, 6, false, phalanx::config::AshaRule::Stopping, 2);  // brackets 0 1 0 0 1 0
  for (int trial = 0; trial < 5; ++trial) asha.take(new_trial);
  asha.record(1, 1, 0.9);  // bracket 1's first result at rung 1: goes on
  asha.record(0, 0, 0.4);  // bracket 0's first at rung 0: goes on
  asha.take({0, 1});
  asha.record(0, 1, 0.95);  // bracket 0's first at rung 1: goes on, whatever bracket 1 holds
  asha.record(4, 1, 0.92);  // bracket 1: top max(1, 2 / 3) = 1 of {0.92, 0.9}: goes on
  EXPECT_TRUE(asha.goes_on(0, 1));
  EXPECT_TRUE(asha.goes_on(4, 1)) << "judged against the whole rung, 0.95 would have stopped it";
  EXPECT_EQ(asha.candidates(), jobs({{0, 2}, {4, 2}, {1, 2}, new_trial}));
}
