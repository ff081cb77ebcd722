// GPU interval statistics and the sampling thread that feeds them. Energy comes from the board's
// energy counter when every reading has it (exact, Volta and newer), otherwise from integrating
// the power readings over time (approximate, one reading per period).
#include <system_error>
#include <utility>

#include "phalanx/core/error.hpp"
#include "phalanx/monitor/gpu_metrics.hpp"

namespace phalanx::monitor {

void GpuIntervalAccumulator::add(const GpuSample& sample) {
  if (sample_count_ == 0) first_seconds_ = sample.seconds;
  last_seconds_ = sample.seconds;
  if (sample.utilization_percent) utilization_percent_.add(*sample.utilization_percent);
  if (sample.memory_used_mib) memory_used_mib_.add(*sample.memory_used_mib);
  if (sample.memory_total_mib) memory_total_mib_ = sample.memory_total_mib;
  if (sample.temperature_celsius) temperature_celsius_.add(*sample.temperature_celsius);
  if (sample.sm_clock_mhz) sm_clock_mhz_.add(*sample.sm_clock_mhz);
  if (sample.power_watts) {
    power_watts_.add(*sample.power_watts);
    if (has_power_reading_)
      integrated_power_joules_ +=
          0.5 * (last_power_watts_ + *sample.power_watts) * (sample.seconds - last_power_seconds_);
    has_power_reading_ = true;
    last_power_seconds_ = sample.seconds;
    last_power_watts_ = *sample.power_watts;
  }
  if (!sample.energy_millijoules) {
    energy_counter_usable_ = false;
  } else if (sample_count_ == 0) {
    first_energy_millijoules_ = last_energy_millijoules_ = *sample.energy_millijoules;
  } else {
    // A counter that went backwards means a driver reload: its difference means nothing.
    if (*sample.energy_millijoules < last_energy_millijoules_) energy_counter_usable_ = false;
    last_energy_millijoules_ = *sample.energy_millijoules;
  }
  ++sample_count_;
}

GpuIntervalStats GpuIntervalAccumulator::stats() const {
  GpuIntervalStats stats;
  stats.seconds = sample_count_ == 0 ? 0.0 : last_seconds_ - first_seconds_;
  stats.sample_count = sample_count_;
  stats.utilization_percent = utilization_percent_;
  stats.memory_used_mib = memory_used_mib_;
  stats.memory_total_mib = memory_total_mib_;
  stats.power_watts = power_watts_;
  stats.temperature_celsius = temperature_celsius_;
  stats.sm_clock_mhz = sm_clock_mhz_;
  if (sample_count_ > 0 && energy_counter_usable_) {
    stats.energy_joules = (last_energy_millijoules_ - first_energy_millijoules_) / 1000.0;
    stats.energy_from_counter = true;
  } else if (power_watts_.measured()) {
    stats.energy_joules = integrated_power_joules_;
  }
  return stats;
}

const std::vector<std::string>& GpuIntervalStats::field_names() {
  static const std::vector<std::string> names = {
      "gpu_sample_count",
      "gpu_utilization_mean_percent",
      "gpu_utilization_peak_percent",
      "gpu_memory_mean_mib",
      "gpu_memory_peak_mib",
      "gpu_memory_total_mib",
      "gpu_power_mean_watts",
      "gpu_power_peak_watts",
      "gpu_energy_joules",
      "gpu_temperature_mean_celsius",
      "gpu_temperature_peak_celsius",
      "gpu_sm_clock_mean_mhz",
      "gpu_sm_clock_peak_mhz",
  };
  return names;
}

std::vector<MetricField> GpuIntervalStats::fields() const {
  std::vector<MetricField> result;
  if (!available || sample_count == 0) return result;
  const auto add_measurement = [&result](const char* mean_key, const char* peak_key,
                                         const Measurement& value) {
    if (!value.measured()) return;
    result.push_back({mean_key, value.mean(), RunTotal::Mean});
    result.push_back({peak_key, value.peak, RunTotal::Peak});
  };
  result.push_back({"gpu_sample_count", static_cast<double>(sample_count), RunTotal::Sum});
  add_measurement("gpu_utilization_mean_percent", "gpu_utilization_peak_percent", utilization_percent);
  add_measurement("gpu_memory_mean_mib", "gpu_memory_peak_mib", memory_used_mib);
  // The device's size: the same in every interval.
  if (memory_total_mib) result.push_back({"gpu_memory_total_mib", *memory_total_mib, RunTotal::Peak});
  add_measurement("gpu_power_mean_watts", "gpu_power_peak_watts", power_watts);
  if (energy_joules) result.push_back({"gpu_energy_joules", *energy_joules, RunTotal::Sum});
  add_measurement("gpu_temperature_mean_celsius", "gpu_temperature_peak_celsius", temperature_celsius);
  add_measurement("gpu_sm_clock_mean_mhz", "gpu_sm_clock_peak_mhz", sm_clock_mhz);
  return result;
}

GpuSampler::GpuSampler(unsigned int device_index, std::chrono::milliseconds period,
                       const std::string& library_path)
    : GpuSampler(std::make_unique<NvmlLibrary>(device_index, library_path), period) {}

GpuSampler::GpuSampler(const GpuDeviceId& device, std::chrono::milliseconds period,
                       const std::string& library_path)
    : GpuSampler(std::make_unique<NvmlLibrary>(device, library_path), period) {}

GpuSampler::GpuSampler(std::unique_ptr<NvmlLibrary> library, std::chrono::milliseconds period)
    : library_(std::move(library)) {
  PHALANX_CHECK(library_ != nullptr, "GpuSampler needs an NVML library object");
  std::lock_guard lock(mutex_);
  interval_start_seconds_ = steady_seconds();
  if (!library_->available()) return;  // nothing to sample: no thread
  sample_locked();
  try {
    thread_ = std::make_unique<PeriodicThread>(period, [this] {
      std::lock_guard task_lock(mutex_);
      sample_locked();
    });
  } catch (const std::system_error&) {
    // No thread to spare: intervals keep their opening and closing readings, which still give
    // the energy from the counter; metrics must not stop training.
  }
}

GpuSampler::~GpuSampler() {
  thread_.reset();
}

void GpuSampler::sample_locked() {
  accumulator_.add(library_->read());
}

void GpuSampler::begin_interval() {
  std::lock_guard lock(mutex_);
  accumulator_ = GpuIntervalAccumulator();
  interval_start_seconds_ = steady_seconds();
  if (library_->available()) sample_locked();
}

GpuIntervalStats GpuSampler::end_interval() {
  std::lock_guard lock(mutex_);
  const double end_seconds = steady_seconds();
  GpuIntervalStats stats;
  if (library_->available()) {
    // The closing reading is also the opening one of the next interval, so that consecutive
    // intervals tile the time line and their energies add up.
    const GpuSample closing = library_->read();
    accumulator_.add(closing);
    stats = accumulator_.stats();
    stats.available = true;
    accumulator_ = GpuIntervalAccumulator();
    accumulator_.add(closing);
  }
  stats.seconds = end_seconds - interval_start_seconds_;
  interval_start_seconds_ = end_seconds;
  return stats;
}

}  // namespace phalanx::monitor
