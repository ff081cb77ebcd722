// Host metrics of this process per interval, with the same shape as the GPU ones: CPU use (as a
// percentage of one core, so 200 means two busy cores), resident memory and the system load
// average, read from /proc by a sampling thread so that CPU ranks report them too.
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
#include "phalanx/monitor/periodic_thread.hpp"

namespace phalanx::monitor {

// One reading of this process and host. A value that could not be read is empty.
struct HostSample {
  double seconds = 0.0;                      // steady_seconds() when it was taken
  std::optional<double> cpu_seconds;         // utime + stime of the process (/proc/self/stat)
  std::optional<double> rss_mib;             // VmRSS (/proc/self/status)
  std::optional<double> rss_high_water_mib;  // VmHWM: the process's peak RSS since it started
  std::optional<double> load_average;        // one-minute load average (/proc/loadavg)
};

// Reads the files above once; never throws.
HostSample read_host_sample();

struct HostIntervalStats {
  bool available = false;  // false: /proc could not be read
  double seconds = 0.0;
  std::size_t sample_count = 0;
  std::optional<double> cpu_mean_percent;  // CPU time over wall time of the whole interval
  std::optional<double> cpu_peak_percent;  // highest rate between readings at least 0.1 s apart
  Measurement rss_mib;
  std::optional<double> rss_high_water_mib;
  Measurement load_average;

  // Stable keys for metrics.jsonl and summary.json, for the quantities measured; see field_names().
  std::vector<MetricField> fields() const;
  static const std::vector<std::string>& field_names();
};

class HostIntervalAccumulator {
 public:
  void add(const HostSample& sample);
  HostIntervalStats stats() const;

 private:
  std::size_t sample_count_ = 0;
  std::optional<HostSample> first_cpu_reading_;
  std::optional<HostSample> last_cpu_reading_;
  // Start of the span for the peak rate: kept until a later reading is far enough away that the
  // clock-tick granularity of /proc/self/stat (10 ms) cannot inflate the rate.
  std::optional<HostSample> peak_span_start_;
  std::optional<double> cpu_peak_percent_;
  Measurement rss_mib_;
  std::optional<double> rss_high_water_mib_;
  Measurement load_average_;
};

// Samples the host in a background thread; the same interval API as GpuSampler. Thread-safe.
class HostSampler {
 public:
  static constexpr std::chrono::milliseconds default_period{500};

  explicit HostSampler(std::chrono::milliseconds period = default_period);
  ~HostSampler();  // stops and joins the thread at once

  HostSampler(const HostSampler&) = delete;
  HostSampler& operator=(const HostSampler&) = delete;

  bool available() const { return reason_.empty(); }
  const std::string& reason() const { return reason_; }

  void begin_interval();
  // Statistics since begin_interval() (or the previous end_interval(), or construction); the next
  // interval starts at the closing reading.
  HostIntervalStats end_interval();

 private:
  std::mutex mutex_;
  HostIntervalAccumulator accumulator_;
  double interval_start_seconds_ = 0.0;
  std::string reason_;
  std::unique_ptr<PeriodicThread> thread_;  // last: destroyed (joined) before what it uses
};

}  // namespace phalanx::monitor
