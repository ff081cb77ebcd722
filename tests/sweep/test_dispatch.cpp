// The heterogeneous dispatch rule (docs/SWEEPS.md) with hand-set speeds: slow groups always get
// rung-0 work, leave a promotion to a busy faster group that would finish it sooner, and take it
// themselves when that group is too far behind.
#include <gtest/gtest.h>

#include "phalanx/sweep/dispatch.hpp"

using phalanx::sweep::Candidate;
using phalanx::sweep::choose_job;
using phalanx::sweep::effective_speed;
using phalanx::sweep::GroupState;

namespace {
// Group 0: a slow CPU rank (1 budget unit per second), asking. Group 1: a fast one (10 per second).
std::vector<GroupState> slow_and_fast(double fast_seconds_left, bool fast_busy = true) {
  return {GroupState{0, false, 1.0, 0.0, false}, GroupState{1, false, 10.0, fast_seconds_left, fast_busy}};
}
const Candidate promotion{{4, 2}, 6.0};    // 6 budget units: 6 s here, 0.6 s on the fast group
const Candidate promotion_b{{7, 1}, 2.0};  // 2 units
const Candidate new_trial{{-1, 0}, 1.0};
}  // namespace

TEST(Dispatch, RungZeroWorkGoesToWhoeverAsks) {
  EXPECT_EQ(choose_job({new_trial}, slow_and_fast(0.1), 0), 0);
  const Candidate requeued{{3, 0}, 1.0};  // a rung-0 job requeued after a kill
  EXPECT_EQ(choose_job({requeued}, slow_and_fast(0.1), 0), 0);
}

TEST(Dispatch, SlowGroupLeavesAPromotionToAFasterBusyGroupThatFinishesSooner) {
  // Fast group: 2 s left + 0.6 s = 2.6 s < 6 s here: the slow group starts a new trial instead.
  EXPECT_EQ(choose_job({promotion, new_trial}, slow_and_fast(2.0), 0), 1);
  // Nothing else to do: it waits rather than hold the top rung hostage.
  EXPECT_EQ(choose_job({promotion}, slow_and_fast(2.0), 0), -1);
}

TEST(Dispatch, SlowGroupTakesThePromotionWhenTheFastGroupIsTooFarBehind) {
  // 10 s left + 0.6 s > 6 s: waiting would finish later than doing it now.
  EXPECT_EQ(choose_job({promotion, new_trial}, slow_and_fast(10.0), 0), 0);
}

TEST(Dispatch, WorkLeftToAFastGroupAddsUp) {
  // First promotion left to the fast group (0.5 + 0.6 = 1.1 s < 6 s); the second would finish there
  // at 0.5 + 0.6 + 0.2 = 1.3 s, well under 2 s here, so it is left too.
  phalanx::sweep::DispatchEstimate estimate;
  EXPECT_EQ(choose_job({promotion, promotion_b, new_trial}, slow_and_fast(0.5), 0, &estimate), 2);
  EXPECT_EQ(estimate.passed_over, 2);
  EXPECT_DOUBLE_EQ(estimate.own_seconds, 1.0);  // the new trial: 1 unit at 1 unit/s
  // With 1.5 s left: 1.5 + 0.6 + 0.2 = 2.3 s > 2 s: the slow group takes the second one.
  EXPECT_EQ(choose_job({promotion, promotion_b, new_trial}, slow_and_fast(1.5), 0), 1);
}

// Waiting must save at least a tenth of the job's time here: a faster group expected to finish
// only slightly sooner (estimates measured with noise) is not worth the risk of a late start.
TEST(Dispatch, AFasterGroupOnlySlightlySoonerIsNotWaitedFor) {
  // As a 4-rank sweep measured it: 5.0 units; 0.0174 units/s here (287 s) against 0.0199 on a
  // group busy for 35 s more (35 + 251 = 286 s): under 1% saved, so the asking group takes it.
  const Candidate top_rung{{24, 2}, 5.0};
  const std::vector<GroupState> close = {GroupState{0, false, 0.0174, 0.0, false},
                                         GroupState{1, false, 0.0199, 35.0, true}};
  phalanx::sweep::DispatchEstimate estimate;
  EXPECT_EQ(choose_job({top_rung}, close, 0, &estimate), 0);
  EXPECT_NEAR(estimate.faster_group_seconds, 35.0 + 5.0 / 0.0199, 1e-9);
  // 10% saved is the threshold: 5.7 s of 6 s (5%) is taken here, 5.3 s (12%) is left.
  EXPECT_EQ(choose_job({promotion, new_trial}, slow_and_fast(5.1), 0), 0);
  EXPECT_EQ(choose_job({promotion, new_trial}, slow_and_fast(4.7), 0), 1);
}

TEST(Dispatch, FastGroupsAndFreeGroupsAreNeverWaitedFor) {
  // The fast group asks: it takes the promotion at once.
  EXPECT_EQ(choose_job({promotion, new_trial}, slow_and_fast(0.0, false), 1), 0);
  // A free faster group would have asked itself; nobody waits for it.
  EXPECT_EQ(choose_job({promotion, new_trial}, slow_and_fast(0.0, false), 0), 0);
  // Equal speeds: no reason to wait.
  std::vector<GroupState> equal = {GroupState{0, false, 2.0, 0.0, false},
                                   GroupState{1, false, 2.0, 0.1, true}};
  EXPECT_EQ(choose_job({promotion}, equal, 0), 0);
  EXPECT_EQ(choose_job({}, equal, 0), -1);
}

TEST(Dispatch, UnmeasuredGpuGroupsCountAsFasterThanCpuGroups) {
  std::vector<GroupState> groups = {GroupState{0, false, 0.0, 0.0, false},
                                    GroupState{1, true, 0.0, 0.5, true},
                                    GroupState{2, false, 3.0, 0.0, true}};
  EXPECT_DOUBLE_EQ(effective_speed(groups[0], groups), 3.0);   // the median measured CPU speed
  EXPECT_DOUBLE_EQ(effective_speed(groups[1], groups), 30.0);  // ten times the fastest measured
  // The CPU rank leaves the promotion to the busy GPU group and starts a new trial.
  EXPECT_EQ(choose_job({promotion, new_trial}, groups, 0), 1);
  EXPECT_DOUBLE_EQ(effective_speed(GroupState{0, false, 0.0, 0.0, false}, {}), 1.0);
}

TEST(Dispatch, ATrialMovesToAGroupOfAnotherSize) {
  // Group 0: one CPU rank; group 1: two GPU ranks. A checkpoint resumes on any number of ranks
  // (elastic resume), so a promoted trial goes to whichever group the rule picks, whatever the
  // size of the group that wrote its checkpoint.
  const Candidate promotion_from_two_ranks{{4, 1}, 2.0};  // 2 s here, 0.04 s on the GPU group
  // The GPU group has 30 s left: the CPU rank takes the promotion itself.
  EXPECT_EQ(choose_job({promotion_from_two_ranks, new_trial},
                       {GroupState{0, false, 1.0, 0.0, false}, GroupState{1, true, 50.0, 30.0, true}}, 0),
            0);
  // The GPU group is nearly done: the CPU rank leaves it the promotion and starts a new trial.
  EXPECT_EQ(choose_job({promotion_from_two_ranks, new_trial},
                       {GroupState{0, false, 1.0, 0.0, false}, GroupState{1, true, 50.0, 0.5, true}}, 0),
            1);
}

// No idle tail: which running trial an idle group joins.
using phalanx::sweep::choose_join;
using phalanx::sweep::MergedSpeed;
using phalanx::sweep::RunningJob;
using phalanx::sweep::seconds_left_after_join;

TEST(JoinRunning, TheJobWithTheMostSecondsLeftGetsTheIdleGroup) {
  const std::vector<RunningJob> running = {RunningJob{0, 5, 1, 40.0, true}, RunningJob{1, 9, 1, 120.0, true},
                                           RunningJob{2, 3, 2, 80.0, true}};
  EXPECT_EQ(choose_join(running, false, 30.0), 1);
}

TEST(JoinRunning, NothingWorthJoiningMeansWaiting) {
  // Below the minimum: a join's checkpoint and resume would cost more than it saves.
  EXPECT_EQ(choose_join({RunningJob{0, 5, 1, 29.0, true}}, false, 30.0), -1);
  EXPECT_EQ(choose_join({RunningJob{0, 5, 1, 30.0, true}}, false, 30.0), 0);
  // Not joinable (groups of both kinds train it), however long it runs.
  EXPECT_EQ(choose_join({RunningJob{0, 5, 1, 500.0, false}}, false, 0.0), -1);
  EXPECT_EQ(choose_join({}, false, 0.0), -1);
}

TEST(JoinRunning, TiesGoToTheLowerTrial) {
  const std::vector<RunningJob> running = {RunningJob{3, 8, 1, 60.0, true}, RunningJob{0, 2, 1, 60.0, true},
                                           RunningJob{1, 4, 1, 60.0, true}};
  EXPECT_EQ(choose_join(running, false, 0.0), 1);
}

TEST(JoinRunning, GroupsOnTheirWayToAJobSpreadTheNextOneElsewhere) {
  // One group, 100 s left; a group as fast on its way halves it: 50 s, so the next idle group
  // picks the 70 s job instead.
  const MergedSpeed unmeasured;
  RunningJob first{0, 1, 1, 100.0, true};
  const RunningJob second{1, 2, 1, 70.0, true};
  EXPECT_EQ(choose_join({first, second}, false, 0.0), 0);
  EXPECT_DOUBLE_EQ(seconds_left_after_join(first.seconds_left, 1.0, 1, 1.0, 1, unmeasured), 50.0);
  first.seconds_left = seconds_left_after_join(first.seconds_left, 1.0, 1, 1.0, 1, unmeasured);
  first.ranks += 1;
  EXPECT_EQ(choose_join({first, second}, false, 0.0), 1);
  // A group as fast as a 2-group job joining it thirds what is left; one twice as fast as a lone
  // group, too.
  EXPECT_DOUBLE_EQ(seconds_left_after_join(90.0, 2.0, 2, 1.0, 1, unmeasured), 60.0);
  EXPECT_DOUBLE_EQ(seconds_left_after_join(90.0, 1.0, 1, 2.0, 1, unmeasured), 30.0);
}

TEST(MergedSpeed, MergedJobsGoAtTheShareOfTheirGroupsSpeedsThatMergedJobsAchieved) {
  MergedSpeed merged;
  // Unmeasured: the sum; a lone group always goes at its own speed.
  EXPECT_FALSE(merged.measured());
  EXPECT_DOUBLE_EQ(merged.efficiency(), 1.0);
  EXPECT_DOUBLE_EQ(merged.speed(4.0, 2), 4.0);
  // Two groups of speed 1 (sum 2) trained 60 units in 60 s: half of the 120 the sum promised, as
  // four ranks on two cores do.
  merged.record(60.0, 60.0, 2.0);
  EXPECT_TRUE(merged.measured());
  EXPECT_DOUBLE_EQ(merged.efficiency(), 0.5);
  EXPECT_DOUBLE_EQ(merged.speed(3.0, 3), 1.5);
  EXPECT_DOUBLE_EQ(merged.speed(3.0, 1), 3.0);
  // Jobs weigh by the units they were promised: 60 + 90 units of 120 + 100 promised.
  merged.record(90.0, 50.0, 2.0);
  EXPECT_DOUBLE_EQ(merged.efficiency(), 150.0 / 220.0);
  // A job with nothing trained or no time tells nothing.
  merged.record(0.0, 10.0, 2.0);
  merged.record(5.0, 0.0, 2.0);
  EXPECT_DOUBLE_EQ(merged.efficiency(), 150.0 / 220.0);
}

TEST(MergedSpeed, AJoinPromisesOnlyWhatMergedJobsAchieved) {
  MergedSpeed merged;
  merged.record(60.0, 60.0, 2.0);  // efficiency 0.5
  // A lone group of speed 1 with 100 s left, joined by another of speed 1: the merged job goes at
  // 2 x 0.5 = 1, so nothing is saved and the estimate says so (it said 50 s before a merged job
  // was measured).
  EXPECT_DOUBLE_EQ(seconds_left_after_join(100.0, 1.0, 1, 1.0, 1, merged), 100.0);
  // A merged job of two joined by a third: 1.0 -> 1.5 units/s.
  EXPECT_DOUBLE_EQ(seconds_left_after_join(90.0, 2.0, 2, 1.0, 1, merged), 60.0);
}

TEST(JoinRunning, GroupsJoinOnlyJobsOfTheirKind) {
  // A CPU job with the most seconds left, and a shorter GPU job.
  const std::vector<RunningJob> running = {RunningJob{0, 5, 1, 300.0, true, false},
                                           RunningJob{1, 9, 2, 40.0, true, true}};
  EXPECT_EQ(choose_join(running, false, 10.0), 0);
  // An idle GPU group takes the GPU job, though the CPU one has more left: merged GPU groups sum
  // over NCCL, and a CPU rank among them would set the pace of every step.
  EXPECT_EQ(choose_join(running, true, 10.0), 1);
  // Below the minimum, or no job of its kind: the GPU group waits.
  EXPECT_EQ(choose_join(running, true, 41.0), -1);
  EXPECT_EQ(choose_join({RunningJob{0, 5, 1, 300.0, true, false}}, true, 0.0), -1);
  EXPECT_EQ(choose_join({RunningJob{1, 9, 2, 40.0, true, true}}, false, 0.0), -1);
}
