// Host metrics from /proc: process CPU time (utime + stime), resident memory (VmRSS, VmHWM) and
// the load average, sampled in a thread. The mean CPU use of an interval comes from its first and
// last readings, which begin/end take on the caller's thread, so it is exact however short the
// interval is compared with the sampling period.
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <system_error>

#include "phalanx/monitor/host_metrics.hpp"

namespace phalanx::monitor {
namespace {

constexpr double kib_per_mib = 1024.0;
constexpr double minimum_peak_span_seconds = 0.1;

std::optional<double> read_process_cpu_seconds() {
  std::ifstream file("/proc/self/stat");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may itself hold spaces or ')': the fields
  // after it start behind the last ')'.
  const auto name_end = text.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(name_end + 1));
  std::string field;
  double user_ticks = 0.0;
  double system_ticks = 0.0;
  // Field 3 is the state; utime and stime are fields 14 and 15.
  for (int field_number = 3; field_number <= 15; ++field_number) {
    if (!(fields >> field)) return std::nullopt;
    if (field_number == 14) user_ticks = std::stod(field);
    if (field_number == 15) system_ticks = std::stod(field);
  }
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  if (ticks_per_second <= 0) return std::nullopt;
  return (user_ticks + system_ticks) / static_cast<double>(ticks_per_second);
}

void read_process_memory(HostSample& sample) {
  std::ifstream file("/proc/self/status");
  std::string line;
  while (std::getline(file, line)) {
    const bool is_rss = line.rfind("VmRSS:", 0) == 0;
    const bool is_high_water = line.rfind("VmHWM:", 0) == 0;
    if (!is_rss && !is_high_water) continue;
    std::istringstream value(line.substr(6));
    double kibibytes = 0.0;
    if (!(value >> kibibytes)) continue;
    (is_rss ? sample.rss_mib : sample.rss_high_water_mib) = kibibytes / kib_per_mib;
  }
}

std::optional<double> read_load_average() {
  std::ifstream file("/proc/loadavg");
  double one_minute = 0.0;
  if (!(file >> one_minute)) return std::nullopt;
  return one_minute;
}

}  // namespace

HostSample read_host_sample() {
  HostSample sample;
  sample.seconds = steady_seconds();
  // std::stod may throw on a malformed field; a reading is best effort and must not throw.
  try {
    sample.cpu_seconds = read_process_cpu_seconds();
  } catch (const std::exception&) {
    sample.cpu_seconds.reset();
  }
  read_process_memory(sample);
  sample.load_average = read_load_average();
  return sample;
}

void HostIntervalAccumulator::add(const HostSample& sample) {
  ++sample_count_;
  if (sample.rss_mib) rss_mib_.add(*sample.rss_mib);
  if (sample.rss_high_water_mib) rss_high_water_mib_ = sample.rss_high_water_mib;
  if (sample.load_average) load_average_.add(*sample.load_average);
  if (!sample.cpu_seconds) return;
  if (!first_cpu_reading_) first_cpu_reading_ = sample;
  last_cpu_reading_ = sample;
  if (!peak_span_start_) {
    peak_span_start_ = sample;
    return;
  }
  const double span_seconds = sample.seconds - peak_span_start_->seconds;
  if (span_seconds < minimum_peak_span_seconds) return;
  const double rate_percent = 100.0 * (*sample.cpu_seconds - *peak_span_start_->cpu_seconds) / span_seconds;
  cpu_peak_percent_ = cpu_peak_percent_ ? std::max(*cpu_peak_percent_, rate_percent) : rate_percent;
  peak_span_start_ = sample;
}

HostIntervalStats HostIntervalAccumulator::stats() const {
  HostIntervalStats stats;
  stats.sample_count = sample_count_;
  stats.rss_mib = rss_mib_;
  stats.rss_high_water_mib = rss_high_water_mib_;
  stats.load_average = load_average_;
  if (first_cpu_reading_ && last_cpu_reading_) {
    const double span_seconds = last_cpu_reading_->seconds - first_cpu_reading_->seconds;
    stats.seconds = span_seconds;
    if (span_seconds > 0.0) {
      stats.cpu_mean_percent =
          100.0 * (*last_cpu_reading_->cpu_seconds - *first_cpu_reading_->cpu_seconds) / span_seconds;
      // An interval shorter than the peak span still has a peak: its mean.
      stats.cpu_peak_percent =
          cpu_peak_percent_ ? std::max(*cpu_peak_percent_, *stats.cpu_mean_percent) : *stats.cpu_mean_percent;
    }
  }
  return stats;
}

const std::vector<std::string>& HostIntervalStats::field_names() {
  static const std::vector<std::string> names = {
      "host_sample_count", "host_cpu_mean_percent",   "host_cpu_peak_percent",  "host_rss_mean_mib",
      "host_rss_peak_mib", "host_rss_high_water_mib", "host_load_average_mean", "host_load_average_peak",
  };
  return names;
}

std::vector<MetricField> HostIntervalStats::fields() const {
  std::vector<MetricField> result;
  if (!available || sample_count == 0) return result;
  result.push_back({"host_sample_count", static_cast<double>(sample_count), RunTotal::Sum});
  if (cpu_mean_percent) result.push_back({"host_cpu_mean_percent", *cpu_mean_percent, RunTotal::Mean});
  if (cpu_peak_percent) result.push_back({"host_cpu_peak_percent", *cpu_peak_percent, RunTotal::Peak});
  if (rss_mib.measured()) {
    result.push_back({"host_rss_mean_mib", rss_mib.mean(), RunTotal::Mean});
    result.push_back({"host_rss_peak_mib", rss_mib.peak, RunTotal::Peak});
  }
  if (rss_high_water_mib) result.push_back({"host_rss_high_water_mib", *rss_high_water_mib, RunTotal::Peak});
  if (load_average.measured()) {
    result.push_back({"host_load_average_mean", load_average.mean(), RunTotal::Mean});
    result.push_back({"host_load_average_peak", load_average.peak, RunTotal::Peak});
  }
  return result;
}

HostSampler::HostSampler(std::chrono::milliseconds period) {
  std::lock_guard lock(mutex_);
  interval_start_seconds_ = steady_seconds();
  const HostSample first = read_host_sample();
  if (!first.cpu_seconds && !first.rss_mib) {
    reason_ = "host metrics unavailable: /proc/self/stat and /proc/self/status could not be read";
    return;
  }
  accumulator_.add(first);
  try {
    thread_ = std::make_unique<PeriodicThread>(period, [this] {
      // Read under the lock, as begin/end do, so that readings reach the accumulator in time order.
      std::lock_guard task_lock(mutex_);
      accumulator_.add(read_host_sample());
    });
  } catch (const std::system_error&) {
    // No thread to spare: intervals keep their opening and closing readings (exact mean CPU use),
    // only the peaks between them are lost; metrics must not stop training.
  }
}

HostSampler::~HostSampler() {
  thread_.reset();
}

void HostSampler::begin_interval() {
  std::lock_guard lock(mutex_);
  accumulator_ = HostIntervalAccumulator();
  interval_start_seconds_ = steady_seconds();
  if (available()) accumulator_.add(read_host_sample());
}

HostIntervalStats HostSampler::end_interval() {
  std::lock_guard lock(mutex_);
  const double end_seconds = steady_seconds();
  HostIntervalStats stats;
  if (available()) {
    const HostSample closing = read_host_sample();
    accumulator_.add(closing);
    stats = accumulator_.stats();
    stats.available = true;
    accumulator_ = HostIntervalAccumulator();
    accumulator_.add(closing);
  }
  stats.seconds = end_seconds - interval_start_seconds_;
  interval_start_seconds_ = end_seconds;
  return stats;
}

}  // namespace phalanx::monitor
