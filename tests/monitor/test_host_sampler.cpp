// Tests of the host monitor on this machine's real /proc: a busy loop must read as busy, a sleep
// as idle, touching a large buffer must raise the resident memory, and the sampler thread must
// stop at once. Thresholds leave room for the noise of shared cores.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "phalanx/monitor/host_metrics.hpp"
#include "phalanx/monitor/periodic_thread.hpp"

namespace phalanx::monitor {
namespace {

using namespace std::chrono_literals;

double process_cpu_seconds() {
  timespec time{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time);
  return static_cast<double>(time.tv_sec) + 1e-9 * static_cast<double>(time.tv_nsec);
}

double thread_cpu_seconds() {
  timespec time{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time);
  return static_cast<double>(time.tv_sec) + 1e-9 * static_cast<double>(time.tv_nsec);
}

// Keeps this thread computing until it has used `cpu_seconds` of CPU time (at most 3 s of wall
// time): a fixed amount of work, however many other processes share the cores.
double spin_for_cpu_seconds(double cpu_seconds) {
  const double end_cpu = thread_cpu_seconds() + cpu_seconds;
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  volatile double sink = 0.0;
  while (thread_cpu_seconds() < end_cpu && std::chrono::steady_clock::now() < deadline) {
    for (int step = 0; step < 1000; ++step) sink = sink + std::sqrt(static_cast<double>(step));
  }
  return sink;
}

// The CPU use of this process over `work`, measured independently of /proc by the precise
// process CPU clock, next to what the sampler reported for the same interval.
struct CpuComparison {
  double reference_percent = 0.0;
  HostIntervalStats stats;
};

template <typename Work>
CpuComparison measure_cpu(HostSampler& sampler, Work work) {
  const double cpu_start = process_cpu_seconds();
  const double wall_start = steady_seconds();
  sampler.begin_interval();
  work();
  CpuComparison comparison;
  comparison.stats = sampler.end_interval();
  comparison.reference_percent =
      100.0 * (process_cpu_seconds() - cpu_start) / (steady_seconds() - wall_start);
  return comparison;
}

// Noise allowance: /proc/self/stat counts in 10 ms ticks, over an interval of at least 0.3 s.
constexpr double cpu_tolerance_percent = 10.0;

TEST(HostSampler, BusyLoopReadsAsBusy) {
  HostSampler sampler(50ms);
  ASSERT_TRUE(sampler.available()) << sampler.reason();
  const CpuComparison busy = measure_cpu(sampler, [] { spin_for_cpu_seconds(0.3); });
  ASSERT_TRUE(busy.stats.cpu_mean_percent.has_value());
  EXPECT_NEAR(*busy.stats.cpu_mean_percent, busy.reference_percent, cpu_tolerance_percent);
  // On an unloaded core the spinning thread gets nearly all of it and must read as clearly more
  // than half a core. On the shared development machines other builds can take most of the core
  // (18 % was seen with four competing processes on two cores); then the reading must still
  // follow the reference clock, and show that the process did run.
  if (busy.reference_percent > 70.0) {
    EXPECT_GT(*busy.stats.cpu_mean_percent, 50.0);
  }
  EXPECT_GT(*busy.stats.cpu_mean_percent, 5.0);
  ASSERT_TRUE(busy.stats.cpu_peak_percent.has_value());
  EXPECT_GE(*busy.stats.cpu_peak_percent, *busy.stats.cpu_mean_percent - 1e-9);
  EXPECT_GE(busy.stats.sample_count, 3u);  // begin, end and the thread's readings in between
  EXPECT_GE(busy.stats.seconds, 0.29);
}

TEST(HostSampler, SleepReadsAsIdle) {
  HostSampler sampler(50ms);
  const CpuComparison idle = measure_cpu(sampler, [] { std::this_thread::sleep_for(300ms); });
  ASSERT_TRUE(idle.stats.cpu_mean_percent.has_value());
  EXPECT_LT(*idle.stats.cpu_mean_percent, 50.0);
  EXPECT_GE(*idle.stats.cpu_mean_percent, 0.0);
  EXPECT_NEAR(*idle.stats.cpu_mean_percent, idle.reference_percent, cpu_tolerance_percent);
}

TEST(HostSampler, ResidentMemoryGrowsWhenABufferIsTouched) {
  HostSampler sampler(50ms);
  const HostIntervalStats before = sampler.end_interval();
  ASSERT_TRUE(before.rss_mib.measured());
  constexpr std::size_t buffer_bytes = 200u << 20;
  std::vector<unsigned char> buffer(buffer_bytes, 1);  // value-initialised: every page written
  const HostIntervalStats after = sampler.end_interval();
  EXPECT_EQ(buffer[buffer_bytes / 2], 1);  // keeps the buffer alive until after the reading
  ASSERT_TRUE(after.rss_mib.measured());
  EXPECT_GT(after.rss_mib.peak, before.rss_mib.peak + 150.0);
  ASSERT_TRUE(after.rss_high_water_mib.has_value());
  EXPECT_GE(*after.rss_high_water_mib, after.rss_mib.peak);
}

TEST(HostSampler, DestructionStopsTheThreadPromptly) {
  auto sampler = std::make_unique<HostSampler>(10s);
  std::this_thread::sleep_for(20ms);
  const auto start = std::chrono::steady_clock::now();
  sampler.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST(HostSampler, FieldsHaveTheDocumentedKeys) {
  HostSampler sampler(20ms);
  sampler.begin_interval();
  spin_for_cpu_seconds(0.1);
  const HostIntervalStats stats = sampler.end_interval();
  const auto fields = stats.fields();
  std::vector<std::string> keys;
  for (const auto& field : fields) keys.push_back(field.name);
  EXPECT_EQ(keys, HostIntervalStats::field_names());
  EXPECT_EQ(HostIntervalStats::field_names(),
            (std::vector<std::string>{"host_sample_count", "host_cpu_mean_percent", "host_cpu_peak_percent",
                                      "host_rss_mean_mib", "host_rss_peak_mib", "host_rss_high_water_mib",
                                      "host_load_average_mean", "host_load_average_peak"}));
  for (const auto& field : fields) EXPECT_TRUE(std::isfinite(field.value)) << field.name;
}

TEST(HostSampler, ReadingHasEveryQuantity) {
  const HostSample sample = read_host_sample();
  EXPECT_TRUE(sample.cpu_seconds.has_value());
  EXPECT_GT(sample.rss_mib.value_or(0.0), 0.0);
  EXPECT_GE(sample.rss_high_water_mib.value_or(0.0), sample.rss_mib.value_or(0.0));
  EXPECT_GE(sample.load_average.value_or(-1.0), 0.0);
}

TEST(HostIntervalAccumulator, MeanOverTheIntervalAndPeakOverSpans) {
  HostIntervalAccumulator accumulator;
  const auto add = [&accumulator](double seconds, double cpu_seconds, double rss_mib) {
    HostSample sample;
    sample.seconds = seconds;
    sample.cpu_seconds = cpu_seconds;
    sample.rss_mib = rss_mib;
    sample.rss_high_water_mib = 900.0;
    sample.load_average = 1.0;
    accumulator.add(sample);
  };
  add(0.0, 0.0, 100.0);
  add(1.0, 0.5, 300.0);  // 50 %
  add(2.0, 1.5, 200.0);  // 100 %
  // 1 ms later one tick more: as a rate that is 1000 %, too short a span to count as a peak.
  add(2.001, 1.51, 200.0);
  const HostIntervalStats stats = accumulator.stats();
  EXPECT_NEAR(stats.cpu_mean_percent.value_or(-1.0), 100.0 * 1.51 / 2.001, 1e-9);
  EXPECT_NEAR(stats.cpu_peak_percent.value_or(-1.0), 100.0, 1e-9);
  EXPECT_DOUBLE_EQ(stats.rss_mib.peak, 300.0);
  EXPECT_DOUBLE_EQ(stats.rss_mib.mean(), 200.0);
  EXPECT_DOUBLE_EQ(stats.rss_high_water_mib.value_or(0.0), 900.0);
  EXPECT_EQ(stats.sample_count, 4u);
}

TEST(MonitorPeriodicThread, RunsRepeatedlyAndSurvivesAThrowingTask) {
  std::atomic<int> runs{0};
  {
    PeriodicThread thread(5ms, [&runs] {
      if (++runs == 1) throw std::runtime_error("a failed reading");
    });
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    while (runs < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  }
  EXPECT_GE(runs, 3);
  const int runs_after_destruction = runs;
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(runs, runs_after_destruction);
}

}  // namespace
}  // namespace phalanx::monitor
