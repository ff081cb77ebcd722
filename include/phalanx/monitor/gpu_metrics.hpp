// GPU metrics per interval (an epoch, say): a thread samples NVML every period and the trainer
// asks for mean/peak utilisation, memory, power, temperature, SM clock and the energy used
// between two calls, to put in metrics.jsonl and summary.json (docs/DESIGN.md §7).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "phalanx/monitor/measurement.hpp"
#include "phalanx/monitor/nvml_library.hpp"
#include "phalanx/monitor/periodic_thread.hpp"

namespace phalanx::monitor {

struct GpuIntervalStats {
  bool available = false;  // false: no NVML or no such device; every measurement is empty
  double seconds = 0.0;    // length of the interval
  std::size_t sample_count = 0;
  Measurement utilization_percent;
  Measurement memory_used_mib;
  std::optional<double> memory_total_mib;
  Measurement power_watts;
  Measurement temperature_celsius;
  Measurement sm_clock_mhz;
  std::optional<double> energy_joules;
  bool energy_from_counter = false;  // false: integrated from the power readings

  // Stable keys for metrics.jsonl and summary.json, only for quantities that were measured
  // (nothing at all when the GPU is unavailable). The full set is field_names().
  std::vector<MetricField> fields() const;
  static const std::vector<std::string>& field_names();
};

// Folds samples into interval statistics; the sampler feeds it, tests can feed it directly.
class GpuIntervalAccumulator {
 public:
  void add(const GpuSample& sample);
  GpuIntervalStats stats() const;  // available is left false: only the sampler knows

 private:
  std::size_t sample_count_ = 0;
  double first_seconds_ = 0.0;
  double last_seconds_ = 0.0;
  Measurement utilization_percent_;
  Measurement memory_used_mib_;
  std::optional<double> memory_total_mib_;
  Measurement power_watts_;
  Measurement temperature_celsius_;
  Measurement sm_clock_mhz_;
  // Energy counter: usable only if every sample had it and it never went backwards.
  bool energy_counter_usable_ = true;
  double first_energy_millijoules_ = 0.0;
  double last_energy_millijoules_ = 0.0;
  // Trapezoidal integral of power, for boards without an energy counter.
  double integrated_power_joules_ = 0.0;
  bool has_power_reading_ = false;
  double last_power_seconds_ = 0.0;
  double last_power_watts_ = 0.0;
};

// Samples one GPU in a background thread. Construction never throws on a machine without NVML;
// available() is then false and reason() says why. Thread-safe.
class GpuSampler {
 public:
  static constexpr std::chrono::milliseconds default_period{500};

  explicit GpuSampler(unsigned int device_index, std::chrono::milliseconds period = default_period,
                      const std::string& library_path = NvmlLibrary::default_library_path);
  // GPU ranks: the device named by PCI bus id (see GpuDeviceId).
  explicit GpuSampler(const GpuDeviceId& device, std::chrono::milliseconds period = default_period,
                      const std::string& library_path = NvmlLibrary::default_library_path);
  // Samples through an already opened library (tests inject a fake one).
  GpuSampler(std::unique_ptr<NvmlLibrary> library, std::chrono::milliseconds period = default_period);
  ~GpuSampler();  // stops and joins the thread at once

  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  bool available() const { return library_->available(); }
  const std::string& reason() const { return library_->reason(); }
  const std::string& device_name() const { return library_->device_name(); }
  const GpuDeviceId& device_id() const { return library_->device_id(); }

  // Starts a new interval now, discarding what was sampled since the last one.
  void begin_interval();
  // Statistics since begin_interval() (or the previous end_interval(), or construction), taking a
  // last reading now; the next interval starts at this same reading.
  GpuIntervalStats end_interval();

 private:
  void sample_locked();

  std::unique_ptr<NvmlLibrary> library_;
  std::mutex mutex_;
  GpuIntervalAccumulator accumulator_;
  double interval_start_seconds_ = 0.0;
  std::unique_ptr<PeriodicThread> thread_;  // last: destroyed (joined) before what it uses
};

}  // namespace phalanx::monitor
