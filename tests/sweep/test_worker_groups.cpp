// The worker groups a sweep's ranks form (plan_worker_groups): GPU ranks in groups of
// workers.gpu_ranks_per_trial (a remainder left out), CPU ranks cut by workers.cpu_ranks_per_trial
// (repeated, the last group taking what is left), numbered by their first world rank.
#include <gtest/gtest.h>

#include <vector>

#include "worker_groups.hpp"

namespace phalanx::sweep {
namespace {

config::SweepConfig workers(int gpu_ranks_per_trial, std::vector<int> cpu_ranks_per_trial, bool cpu_trials = true) {
  config::SweepConfig sweep;
  sweep.gpu_ranks_per_trial = gpu_ranks_per_trial;
  sweep.cpu_ranks_per_trial = std::move(cpu_ranks_per_trial);
  sweep.cpu_trials = cpu_trials;
  return sweep;
}

TEST(WorkerGroups, CpuRanksAloneByDefault) {
  const WorkerGroups plan = plan_worker_groups({false, false, false}, workers(1, {1}));
  EXPECT_EQ(plan.members, (std::vector<std::vector<int>>{{0}, {1}, {2}}));
  EXPECT_EQ(plan.group_of, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(plan.gpu_ranks_left_out, 0);
}

TEST(WorkerGroups, GpuRanksInGroupsTheRemainderLeftOut) {
  // Ranks 0, 2, 3 drive GPUs, 1 and 4 the CPU: GPU pairs take {0, 2}; 3 cannot fill a pair.
  const WorkerGroups plan = plan_worker_groups({true, false, true, true, false}, workers(2, {1}));
  EXPECT_EQ(plan.members, (std::vector<std::vector<int>>{{0, 2}, {1}, {4}}));
  EXPECT_EQ(plan.group_of, (std::vector<int>{0, 1, 0, -1, 2}));
  EXPECT_EQ(plan.gpu_ranks_left_out, 1);
}

TEST(WorkerGroups, CpuGroupSizesRepeatAndTheLastTakesWhatIsLeft) {
  const WorkerGroups plan = plan_worker_groups(std::vector<bool>(6, false), workers(1, {1, 2}));
  EXPECT_EQ(plan.members, (std::vector<std::vector<int>>{{0}, {1, 2}, {3}, {4, 5}}));
  const WorkerGroups short_tail = plan_worker_groups(std::vector<bool>(4, false), workers(1, {3}));
  EXPECT_EQ(short_tail.members, (std::vector<std::vector<int>>{{0, 1, 2}, {3}}));
}

TEST(WorkerGroups, CpuRanksStayOutWhenTheyTakeNoTrials) {
  const WorkerGroups plan = plan_worker_groups({false, true, false, true}, workers(1, {1}, false));
  EXPECT_EQ(plan.members, (std::vector<std::vector<int>>{{1}, {3}}));
  EXPECT_EQ(plan.group_of, (std::vector<int>{-1, 0, -1, 1}));
  EXPECT_TRUE(plan_worker_groups({false, false}, workers(1, {1}, false)).members.empty());
}

}  // namespace
}  // namespace phalanx::sweep
