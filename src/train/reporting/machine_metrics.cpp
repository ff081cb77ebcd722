// The machine metrics of a run (machine_metrics.hpp): two samplers and the run's totals.
#include "reporting/machine_metrics.hpp"

#include <algorithm>

namespace phalanx::train {

MachineMetrics::MachineMetrics(const backend::Backend& backend)
    : host_(std::make_unique<monitor::HostSampler>()) {
  if (const auto device = backend.device_identity())
    gpu_ = std::make_unique<monitor::GpuSampler>(
        monitor::GpuDeviceId{static_cast<unsigned>(device->index), device->pci_bus_id});
}

std::string MachineMetrics::gpu_unavailable_reason() const {
  return gpu_ && !gpu_->available() ? gpu_->reason() : std::string();
}

std::vector<monitor::MetricField> MachineMetrics::close_interval(double seconds) {
  std::vector<monitor::MetricField> fields = host_->end_interval().fields();
  if (gpu_)
    for (auto& field : gpu_->end_interval().fields()) fields.push_back(std::move(field));
  for (const auto& field : fields) {
    double& total = totals_[field.name];
    switch (field.total) {
      case monitor::RunTotal::Peak: total = std::max(total, field.value); break;
      case monitor::RunTotal::Sum: total += field.value; break;
      case monitor::RunTotal::Mean:
        total = (total * seconds_ + field.value * seconds) / std::max(seconds_ + seconds, 1e-9);
        break;
    }
  }
  seconds_ += seconds;
  return fields;
}

}  // namespace phalanx::train
