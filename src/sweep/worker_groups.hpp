// Worker groups: how a sweep's ranks form the groups that train its trials (docs/SWEEPS.md). GPU
// ranks in world order, workers.gpu_ranks_per_trial to a group (a remainder that cannot fill a
// group stays out: an NCCL group of fewer GPUs would be the slow one); CPU ranks in world order, cut
// into groups of the sizes workers.cpu_ranks_per_trial lists, repeated, the last group taking what
// is left, when CPU ranks take trials. Groups are numbered by their first world rank.
#pragma once

#include <vector>

#include "phalanx/config/sweep_config.hpp"

namespace phalanx::sweep {

struct WorkerGroups {
  std::vector<std::vector<int>> members;  // each group's world ranks, leader first
  std::vector<int> group_of;              // per world rank: its group, -1 when it is in none
  int gpu_ranks_left_out = 0;             // GPU ranks too few to fill a last group
};

// Pure: every rank plans the same groups from the same gathered device kinds (`gpu`, one per
// world rank).
WorkerGroups plan_worker_groups(const std::vector<bool>& gpu, const config::SweepConfig& sweep);

}  // namespace phalanx::sweep
