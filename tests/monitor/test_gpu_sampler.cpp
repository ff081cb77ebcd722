// Tests of the GPU monitor. Development machines have no driver, so the NVML loader is checked
// against missing and wrong libraries, and the sampler and its statistics are driven by an
// in-process fake NVML whose readings are known.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "phalanx/monitor/gpu_metrics.hpp"

namespace phalanx::monitor {
namespace {

using namespace std::chrono_literals;

// The fake NVML: utilisation alternates 50/70 %, the energy counter rises by 1000 mJ per read, so
// an interval of n readings used exactly n - 1 joules.
std::atomic<int> fake_shutdown_calls{0};
std::atomic<int> fake_utilization_reads{0};
std::atomic<unsigned long long> fake_energy_millijoules{0};
int fake_device_object = 0;

nvml::Return fake_init() {
  return nvml::success;
}
nvml::Return fake_shutdown() {
  ++fake_shutdown_calls;
  return nvml::success;
}
nvml::Return fake_get_handle(unsigned int index, nvml::Device* device) {
  if (index != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = reinterpret_cast<nvml::Device>(&fake_device_object);
  return nvml::success;
}
nvml::Return fake_get_utilization(nvml::Device, nvml::Utilization* utilization) {
  utilization->gpu = (fake_utilization_reads++ % 2 == 0) ? 50 : 70;
  utilization->memory = 10;
  return nvml::success;
}
nvml::Return fake_get_memory(nvml::Device, nvml::Memory* memory) {
  memory->total = 80ull << 30;
  memory->used = 2ull << 30;
  memory->free = memory->total - memory->used;
  return nvml::success;
}
nvml::Return fake_get_power(nvml::Device, unsigned int* milliwatts) {
  *milliwatts = 250000;
  return nvml::success;
}
nvml::Return fake_get_temperature(nvml::Device, int sensor, unsigned int* celsius) {
  if (sensor != nvml::temperature_sensor_gpu) return 2;
  *celsius = 45;
  return nvml::success;
}
nvml::Return fake_get_clock(nvml::Device, int clock_type, unsigned int* megahertz) {
  if (clock_type != nvml::clock_type_sm) return 2;
  *megahertz = 1980;
  return nvml::success;
}
nvml::Return fake_get_energy(nvml::Device, unsigned long long* millijoules) {
  *millijoules = fake_energy_millijoules += 1000;
  return nvml::success;
}
nvml::Return fake_get_energy_unsupported(nvml::Device, unsigned long long*) {
  return 3;  // NVML_ERROR_NOT_SUPPORTED
}
nvml::Return fake_get_name(nvml::Device, char* name, unsigned int length) {
  std::strncpy(name, "Fake H200", length);
  return nvml::success;
}
const char* fake_error_string(nvml::Return) {
  return "fake error";
}
nvml::Return fake_get_handle_by_pci_bus_id(const char* pci_bus_id, nvml::Device* device) {
  if (std::string(pci_bus_id) != "00000000:3B:00.0") return 6;  // NVML_ERROR_NOT_FOUND
  *device = reinterpret_cast<nvml::Device>(&fake_device_object);
  return nvml::success;
}

NvmlFunctions fake_functions() {
  NvmlFunctions functions;
  functions.init = fake_init;
  functions.shutdown = fake_shutdown;
  functions.get_handle_by_index = fake_get_handle;
  functions.get_utilization_rates = fake_get_utilization;
  functions.get_memory_info = fake_get_memory;
  functions.get_power_usage = fake_get_power;
  functions.get_temperature = fake_get_temperature;
  functions.get_clock_info = fake_get_clock;
  functions.get_total_energy_consumption = fake_get_energy;
  functions.get_name = fake_get_name;
  functions.error_string = fake_error_string;
  functions.get_handle_by_pci_bus_id = fake_get_handle_by_pci_bus_id;
  return functions;
}

bool has_key(const std::vector<MetricField>& fields, const std::string& key) {
  return std::any_of(fields.begin(), fields.end(), [&key](const auto& field) { return field.name == key; });
}

TEST(NvmlLibrary, BogusLibraryPathIsUnavailableWithReason) {
  const NvmlLibrary library(0, "/nonexistent/folder/libnvidia-ml-bogus.so.1");
  EXPECT_FALSE(library.available());
  EXPECT_NE(library.reason().find("/nonexistent/folder/libnvidia-ml-bogus.so.1"), std::string::npos)
      << library.reason();
  EXPECT_NE(library.reason().find("libnvidia-ml"), std::string::npos) << library.reason();
  const GpuSample sample = library.read();
  EXPECT_FALSE(sample.utilization_percent.has_value());
  EXPECT_FALSE(sample.energy_millijoules.has_value());
}

TEST(NvmlLibrary, LibraryWithoutNvmlSymbolsNamesTheMissingOnes) {
  // The C library loads but exports none of NVML's functions.
  const NvmlLibrary library(0, "libc.so.6");
  EXPECT_FALSE(library.available());
  EXPECT_NE(library.reason().find("nvmlInit_v2"), std::string::npos) << library.reason();
  EXPECT_NE(library.reason().find("nvmlDeviceGetHandleByIndex_v2"), std::string::npos) << library.reason();
  // The reading functions are optional and not listed as missing.
  EXPECT_EQ(library.reason().find("nvmlDeviceGetTotalEnergyConsumption"), std::string::npos)
      << library.reason();
}

TEST(NvmlLibrary, FakeFunctionsGiveReadingsInDocumentedUnits) {
  const int shutdowns_before = fake_shutdown_calls;
  {
    const NvmlLibrary library(GpuDeviceId{}, fake_functions());
    ASSERT_TRUE(library.available()) << library.reason();
    EXPECT_EQ(library.device_name(), "Fake H200");
    const GpuSample sample = library.read();
    EXPECT_DOUBLE_EQ(sample.memory_total_mib.value_or(0.0), 80.0 * 1024.0);
    EXPECT_DOUBLE_EQ(sample.memory_used_mib.value_or(0.0), 2.0 * 1024.0);
    EXPECT_DOUBLE_EQ(sample.power_watts.value_or(0.0), 250.0);  // NVML reports milliwatts
    EXPECT_DOUBLE_EQ(sample.temperature_celsius.value_or(0.0), 45.0);
    EXPECT_DOUBLE_EQ(sample.sm_clock_mhz.value_or(0.0), 1980.0);
    EXPECT_TRUE(sample.energy_millijoules.has_value());
  }
  EXPECT_EQ(fake_shutdown_calls, shutdowns_before + 1);  // nvmlShutdown exactly once
}

TEST(NvmlLibrary, MissingDeviceIsUnavailableAndStillShutsDown) {
  const int shutdowns_before = fake_shutdown_calls;
  {
    const NvmlLibrary library(GpuDeviceId{3, {}}, fake_functions());
    EXPECT_FALSE(library.available());
    EXPECT_NE(library.reason().find("nvmlDeviceGetHandleByIndex_v2"), std::string::npos) << library.reason();
    EXPECT_NE(library.reason().find("fake error"), std::string::npos) << library.reason();
  }
  EXPECT_EQ(fake_shutdown_calls, shutdowns_before + 1);
}

TEST(NvmlLibrary, DeviceByPciBusIdIsFoundOrNamedInTheReason) {
  const NvmlLibrary found(GpuDeviceId{0, "00000000:3B:00.0"}, fake_functions());
  EXPECT_TRUE(found.available()) << found.reason();
  const NvmlLibrary missing(GpuDeviceId{0, "00000000:86:00.0"}, fake_functions());
  EXPECT_FALSE(missing.available());
  EXPECT_NE(missing.reason().find("PCI bus id 00000000:86:00.0"), std::string::npos) << missing.reason();
  NvmlFunctions without_bus_lookup = fake_functions();
  without_bus_lookup.get_handle_by_pci_bus_id = nullptr;
  EXPECT_TRUE(NvmlLibrary(GpuDeviceId{}, without_bus_lookup).available());  // not needed by index
  EXPECT_FALSE(NvmlLibrary(GpuDeviceId{0, "00000000:3B:00.0"}, without_bus_lookup).available());
}

TEST(NvmlLibrary, IncompleteFunctionTableIsUnavailable) {
  NvmlFunctions functions = fake_functions();
  functions.get_handle_by_index = nullptr;
  const NvmlLibrary library(GpuDeviceId{}, functions);
  EXPECT_FALSE(library.available());
  EXPECT_NE(library.reason().find("libnvidia-ml"), std::string::npos);
}

TEST(NvmlLibrary, MissingReadingFunctionsLeaveOnlyTheirQuantitiesEmpty) {
  // A driver without the energy counter or the clock query still reports the rest.
  NvmlFunctions functions = fake_functions();
  functions.get_total_energy_consumption = nullptr;
  functions.get_clock_info = nullptr;
  functions.get_name = nullptr;
  const NvmlLibrary library(GpuDeviceId{}, functions);
  ASSERT_TRUE(library.available()) << library.reason();
  EXPECT_EQ(library.device_name(), "");
  const GpuSample sample = library.read();
  EXPECT_FALSE(sample.energy_millijoules.has_value());
  EXPECT_FALSE(sample.sm_clock_mhz.has_value());
  EXPECT_DOUBLE_EQ(sample.power_watts.value_or(0.0), 250.0);
  EXPECT_DOUBLE_EQ(sample.temperature_celsius.value_or(0.0), 45.0);
}

// Runs everywhere (the name has no "Cuda"): without a driver the sampler must say why and give
// empty but well-formed intervals; with one (the GPU machine) it must give real readings.
TEST(GpuSampler, DefaultLibraryEitherSamplesOrExplainsItsAbsence) {
  GpuSampler sampler(0, 50ms);
  sampler.begin_interval();
  std::this_thread::sleep_for(120ms);
  const GpuIntervalStats stats = sampler.end_interval();
  EXPECT_GE(stats.seconds, 0.1);
  if (sampler.available()) {
    EXPECT_TRUE(stats.available);
    EXPECT_GE(stats.sample_count, 2u);
    EXPECT_TRUE(has_key(stats.fields(), "gpu_memory_total_mib"));
  } else {
    EXPECT_NE(sampler.reason().find("libnvidia-ml"), std::string::npos) << sampler.reason();
    EXPECT_FALSE(stats.available);
    EXPECT_EQ(stats.sample_count, 0u);
    EXPECT_FALSE(stats.energy_joules.has_value());
    EXPECT_FALSE(stats.utilization_percent.measured());
    EXPECT_TRUE(stats.fields().empty());
  }
}

TEST(GpuSampler, BogusLibraryPathGivesEmptyIntervals) {
  GpuSampler sampler(0, 20ms, "/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(sampler.available());
  EXPECT_NE(sampler.reason().find("libnvidia-ml"), std::string::npos);
  const GpuIntervalStats first = sampler.end_interval();
  const GpuIntervalStats second = sampler.end_interval();
  EXPECT_FALSE(first.available);
  EXPECT_EQ(second.sample_count, 0u);
  EXPECT_GE(second.seconds, 0.0);
  EXPECT_TRUE(second.fields().empty());
}

TEST(GpuSampler, FakeDeviceIntervalsHaveMeanPeakAndCounterEnergy) {
  GpuSampler sampler(std::make_unique<NvmlLibrary>(GpuDeviceId{}, fake_functions()), 10ms);
  ASSERT_TRUE(sampler.available()) << sampler.reason();
  sampler.begin_interval();
  std::this_thread::sleep_for(100ms);
  const GpuIntervalStats stats = sampler.end_interval();
  ASSERT_TRUE(stats.available);
  ASSERT_GE(stats.sample_count, 3u);
  EXPECT_GT(stats.utilization_percent.mean(), 50.0);
  EXPECT_LT(stats.utilization_percent.mean(), 70.0);
  EXPECT_DOUBLE_EQ(stats.utilization_percent.peak, 70.0);
  EXPECT_DOUBLE_EQ(stats.power_watts.mean(), 250.0);
  EXPECT_DOUBLE_EQ(stats.temperature_celsius.peak, 45.0);
  EXPECT_DOUBLE_EQ(stats.memory_used_mib.peak, 2048.0);
  ASSERT_TRUE(stats.energy_joules.has_value());
  EXPECT_TRUE(stats.energy_from_counter);
  EXPECT_DOUBLE_EQ(*stats.energy_joules, static_cast<double>(stats.sample_count - 1));
  const auto fields = stats.fields();
  EXPECT_EQ(fields.size(), GpuIntervalStats::field_names().size());
  for (const std::string& key : GpuIntervalStats::field_names()) EXPECT_TRUE(has_key(fields, key)) << key;

  // The next interval starts at the closing reading of this one.
  std::this_thread::sleep_for(30ms);
  const GpuIntervalStats next = sampler.end_interval();
  EXPECT_GE(next.sample_count, 2u);
  EXPECT_DOUBLE_EQ(next.energy_joules.value_or(-1.0), static_cast<double>(next.sample_count - 1));
}

TEST(GpuSampler, WithoutEnergyCounterIntegratesPower) {
  NvmlFunctions functions = fake_functions();
  functions.get_total_energy_consumption = fake_get_energy_unsupported;
  GpuSampler sampler(std::make_unique<NvmlLibrary>(GpuDeviceId{}, functions), 10ms);
  sampler.begin_interval();
  std::this_thread::sleep_for(60ms);
  const GpuIntervalStats stats = sampler.end_interval();
  ASSERT_TRUE(stats.energy_joules.has_value());
  EXPECT_FALSE(stats.energy_from_counter);
  // 250 W held over the span of the readings, which is the interval's length within microseconds.
  EXPECT_GT(*stats.energy_joules, 0.0);
  EXPECT_LE(*stats.energy_joules, 250.0 * (stats.seconds + 0.01));
  EXPECT_GE(*stats.energy_joules, 250.0 * (stats.seconds - 0.01));
}

TEST(GpuSampler, DestructionStopsTheThreadPromptly) {
  auto sampler =
      std::make_unique<GpuSampler>(std::make_unique<NvmlLibrary>(GpuDeviceId{}, fake_functions()), 10s);
  const auto start = std::chrono::steady_clock::now();
  sampler.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST(GpuIntervalAccumulator, IntegratesPowerByTrapezoidsAndPrefersTheCounter) {
  GpuIntervalAccumulator integrated;
  GpuSample sample;
  sample.seconds = 10.0;
  sample.power_watts = 100.0;
  integrated.add(sample);
  sample.seconds = 11.0;
  sample.power_watts = 200.0;
  integrated.add(sample);
  sample.seconds = 13.0;
  sample.power_watts = 200.0;
  integrated.add(sample);
  GpuIntervalStats stats = integrated.stats();
  EXPECT_DOUBLE_EQ(stats.energy_joules.value_or(-1.0), 150.0 + 400.0);
  EXPECT_FALSE(stats.energy_from_counter);
  EXPECT_DOUBLE_EQ(stats.power_watts.peak, 200.0);
  EXPECT_NEAR(stats.power_watts.mean(), 500.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(stats.seconds, 3.0);

  GpuIntervalAccumulator counted;
  sample.seconds = 0.0;
  sample.energy_millijoules = 5000.0;
  counted.add(sample);
  sample.seconds = 1.0;
  sample.energy_millijoules = 7500.0;
  counted.add(sample);
  stats = counted.stats();
  EXPECT_TRUE(stats.energy_from_counter);
  EXPECT_DOUBLE_EQ(stats.energy_joules.value_or(-1.0), 2.5);
}

TEST(GpuIntervalAccumulator, CounterGoingBackwardsFallsBackToPower) {
  GpuIntervalAccumulator accumulator;
  GpuSample sample;
  sample.seconds = 0.0;
  sample.power_watts = 100.0;
  sample.energy_millijoules = 9000.0;
  accumulator.add(sample);
  sample.seconds = 2.0;
  sample.energy_millijoules = 10.0;  // the driver was reloaded
  accumulator.add(sample);
  const GpuIntervalStats stats = accumulator.stats();
  EXPECT_FALSE(stats.energy_from_counter);
  EXPECT_DOUBLE_EQ(stats.energy_joules.value_or(-1.0), 200.0);
}

}  // namespace
}  // namespace phalanx::monitor
