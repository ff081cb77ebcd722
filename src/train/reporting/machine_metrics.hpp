// MachineMetrics: the machine beside the training (docs/DESIGN.md §7): host CPU and memory on
// every rank, and on GPU ranks utilisation, memory, power, temperature, clocks and energy through
// NVML. Each epoch closes an interval; the run's totals fold the intervals, each metric by its own
// rule (monitor::RunTotal).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/monitor/gpu_metrics.hpp"
#include "phalanx/monitor/host_metrics.hpp"

namespace phalanx::train {

class MachineMetrics {
 public:
  // Samples the GPU `backend` drives when it drives one (matched by PCI bus id, because NVML
  // ignores CUDA_VISIBLE_DEVICES).
  explicit MachineMetrics(const backend::Backend& backend);
  // Why a GPU rank has no GPU metrics (no NVML); empty otherwise.
  std::string gpu_unavailable_reason() const;
  // The interval since the last call, `seconds` long: its metrics, also folded into the totals.
  std::vector<monitor::MetricField> close_interval(double seconds);
  // The run's totals so far: peaks the maximum, sums added, means weighted by interval length.
  const std::map<std::string, double>& totals() const { return totals_; }

 private:
  std::unique_ptr<monitor::HostSampler> host_;
  std::unique_ptr<monitor::GpuSampler> gpu_;
  std::map<std::string, double> totals_;
  double seconds_ = 0;
};

}  // namespace phalanx::train
