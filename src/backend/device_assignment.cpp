// GPU assignment of a node's ranks (see device_assignment.hpp).
#include "phalanx/backend/device_assignment.hpp"

#include <algorithm>
#include <set>

namespace phalanx::backend {

std::vector<int> assign_local_gpus(const std::vector<std::vector<std::string>>& visible) {
  std::set<std::string> taken;
  std::vector<int> assignment;
  assignment.reserve(visible.size());
  for (const auto& devices : visible) {
    int chosen = -1;
    for (std::size_t index = 0; index < devices.size() && chosen < 0; ++index)
      if (taken.insert(devices[index]).second) chosen = static_cast<int>(index);
    assignment.push_back(chosen);
  }
  return assignment;
}

int distinct_gpus(const std::vector<std::vector<std::string>>& visible) {
  std::set<std::string> devices;
  for (const auto& list : visible) devices.insert(list.begin(), list.end());
  return static_cast<int>(devices.size());
}

}  // namespace phalanx::backend
