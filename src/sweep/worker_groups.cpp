// The worker groups of a sweep (worker_groups.hpp).
#include "worker_groups.hpp"

#include <algorithm>

namespace phalanx::sweep {

WorkerGroups plan_worker_groups(const std::vector<bool>& gpu, const config::SweepConfig& sweep) {
  std::vector<int> gpu_ranks, cpu_ranks;
  for (int rank = 0; rank < static_cast<int>(gpu.size()); ++rank)
    (gpu[static_cast<std::size_t>(rank)] ? gpu_ranks : cpu_ranks).push_back(rank);
  const auto per_trial = static_cast<std::size_t>(sweep.gpu_ranks_per_trial);
  const std::size_t full = gpu_ranks.size() / per_trial * per_trial;
  std::vector<std::vector<int>> groups;
  for (std::size_t index = 0; index < full; index += per_trial)
    groups.emplace_back(gpu_ranks.begin() + static_cast<long>(index),
                        gpu_ranks.begin() + static_cast<long>(index + per_trial));
  if (sweep.cpu_trials) {
    std::size_t next = 0;
    for (std::size_t index = 0; next < cpu_ranks.size(); ++index) {
      const auto size = static_cast<std::size_t>(sweep.cpu_ranks_per_trial[index % sweep.cpu_ranks_per_trial.size()]);
      const std::size_t end = std::min(cpu_ranks.size(), next + size);
      groups.emplace_back(cpu_ranks.begin() + static_cast<long>(next), cpu_ranks.begin() + static_cast<long>(end));
      next = end;
    }
  }
  std::sort(groups.begin(), groups.end());
  WorkerGroups plan;
  plan.group_of.assign(gpu.size(), -1);
  for (auto& group : groups) {
    for (const int rank : group) plan.group_of[static_cast<std::size_t>(rank)] = static_cast<int>(plan.members.size());
    plan.members.push_back(std::move(group));
  }
  plan.gpu_ranks_left_out = static_cast<int>(gpu_ranks.size() - full);
  return plan;
}

}  // namespace phalanx::sweep
