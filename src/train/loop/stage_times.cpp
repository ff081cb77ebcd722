// StageTimes: a step's seconds per stage, their sums, and their JSON form (mean milliseconds per
// step and shares of the step), shared by summary.json, the epoch events and the breakdown table.
#include "loop/stage_times.hpp"

#include <algorithm>
#include <utility>

namespace phalanx::train {

double& StageTimes::operator[](Stage stage) {
  switch (stage) {
    case Stage::DataWait: return data_wait;
    case Stage::HostToDevice: return host_to_device;
    case Stage::Forward: return forward;
    case Stage::Backward: return backward;
    case Stage::AllReduceWait: return allreduce_wait;
    case Stage::Optimizer: return optimizer;
    case Stage::SyncWait: return sync_wait;
  }
  return other;
}

void StageTimes::close_other() {
  other = std::max(
      0.0, total - data_wait - host_to_device - forward - backward - allreduce_wait - optimizer - sync_wait);
}

void StageTimes::add(const StageTimes& step) {
  data_wait += step.data_wait;
  forward += step.forward;
  backward += step.backward;
  allreduce_wait += step.allreduce_wait;
  optimizer += step.optimizer;
  sync_wait += step.sync_wait;
  other += step.other;
  total += step.total;
  host_to_device += step.host_to_device;
  allreduce_total += step.allreduce_total;
  host_to_device_total += step.host_to_device_total;
  host_to_device_bytes += step.host_to_device_bytes;
}

nlohmann::json StageTimes::to_json(std::int64_t steps) const {
  const double count = static_cast<double>(std::max<std::int64_t>(steps, 1));
  const double whole = total > 0 ? total : 1.0;
  nlohmann::json result;
  const std::pair<const char*, double> stages[] = {
      {"data_wait", data_wait}, {"forward", forward},
      {"backward", backward},   {"allreduce_wait", allreduce_wait},
      {"optimizer", optimizer}, {"sync_wait", sync_wait},
      {"other", other}};
  for (const auto& [name, seconds] : stages)
    result[name] = {{"ms_per_step", 1000.0 * seconds / count}, {"share", seconds / whole}};
  result["host_to_device"] = {{"ms_per_step", 1000.0 * host_to_device / count},
                              {"share", host_to_device / whole}};
  // The copy's whole time and how much of it hid behind compute (GPU ranks; 0 on CPU ranks).
  result["host_to_device_total"] = {
      {"ms_per_step", 1000.0 * host_to_device_total / count},
      {"hidden_share", host_to_device_total > 0 ? 1.0 - host_to_device / host_to_device_total : 0.0},
      {"bytes_per_step", host_to_device_bytes / count}};
  result["allreduce_total"] = {
      {"ms_per_step", 1000.0 * allreduce_total / count},
      {"exposed_share", allreduce_total > 0 ? allreduce_wait / allreduce_total : 0.0}};
  result["step_ms"] = 1000.0 * total / count;
  result["steps"] = steps;
  return result;
}

}  // namespace phalanx::train
