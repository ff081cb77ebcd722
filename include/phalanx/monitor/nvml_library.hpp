// NVML, the NVIDIA driver's management library, opened at run time with dlopen: it ships with the
// driver (libnvidia-ml.so.1), not with the CUDA toolkit, so a machine without a GPU must build and
// run without it. The few ABI types used here are declared from NVML's documented C interface.
#pragma once

#include <optional>
#include <string>

namespace phalanx::monitor {

// NVML's C ABI, declared here so that no NVML or CUDA header is needed (docs/DESIGN.md §9).
namespace nvml {
using Return = int;  // nvmlReturn_t, an enum: NVML_SUCCESS = 0
inline constexpr Return success = 0;
struct DeviceOpaque;  // nvmlDevice_t is a pointer to an opaque struct
using Device = DeviceOpaque*;
struct Utilization {  // nvmlUtilization_t: percent of the last sample period
  unsigned int gpu;
  unsigned int memory;
};
struct Memory {  // nvmlMemory_t (v1): bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
inline constexpr int temperature_sensor_gpu = 0;  // NVML_TEMPERATURE_GPU
inline constexpr int clock_type_sm = 1;           // NVML_CLOCK_SM (GRAPHICS 0, SM 1, MEM 2, VIDEO 3)
inline constexpr unsigned int device_name_buffer_size = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE

using InitFunction = Return (*)();
using ShutdownFunction = Return (*)();
using GetHandleByIndexFunction = Return (*)(unsigned int index, Device* device);
using GetHandleByPciBusIdFunction = Return (*)(const char* pci_bus_id, Device* device);
using GetUtilizationRatesFunction = Return (*)(Device device, Utilization* utilization);
using GetMemoryInfoFunction = Return (*)(Device device, Memory* memory);
using GetPowerUsageFunction = Return (*)(Device device, unsigned int* milliwatts);
using GetTemperatureFunction = Return (*)(Device device, int sensor, unsigned int* celsius);
using GetClockInfoFunction = Return (*)(Device device, int clock_type, unsigned int* megahertz);
using GetTotalEnergyConsumptionFunction = Return (*)(Device device, unsigned long long* millijoules);
using GetNameFunction = Return (*)(Device device, char* name, unsigned int length);
using ErrorStringFunction = const char* (*)(Return result);
}  // namespace nvml

// The entry points phalanx uses. init, shutdown and a handle lookup are required; a missing
// reading function leaves its quantity empty, and error_string only improves messages.
struct NvmlFunctions {
  nvml::InitFunction init = nullptr;                             // nvmlInit_v2
  nvml::ShutdownFunction shutdown = nullptr;                     // nvmlShutdown
  nvml::GetHandleByIndexFunction get_handle_by_index = nullptr;  // nvmlDeviceGetHandleByIndex_v2
  nvml::GetUtilizationRatesFunction get_utilization_rates = nullptr;
  nvml::GetMemoryInfoFunction get_memory_info = nullptr;
  nvml::GetPowerUsageFunction get_power_usage = nullptr;
  nvml::GetTemperatureFunction get_temperature = nullptr;
  nvml::GetClockInfoFunction get_clock_info = nullptr;
  nvml::GetTotalEnergyConsumptionFunction get_total_energy_consumption = nullptr;
  nvml::GetNameFunction get_name = nullptr;
  nvml::ErrorStringFunction error_string = nullptr;  // nvmlErrorString, optional
  // nvmlDeviceGetHandleByPciBusId_v2: needed only when a device is named by PCI bus id.
  nvml::GetHandleByPciBusIdFunction get_handle_by_pci_bus_id = nullptr;
};

// Which GPU to read. NVML numbers all of the node's GPUs and ignores CUDA_VISIBLE_DEVICES (which
// Slurm sets per task), so a GPU rank should name its device by the PCI bus id that
// cudaDeviceGetPCIBusId gives for its CUDA device; the NVML index suits tools and single-GPU hosts.
struct GpuDeviceId {
  unsigned int index = 0;
  std::string pci_bus_id;  // e.g. "0000:3B:00.0"; when not empty it is used instead of index

  std::string describe() const;  // "device 0" or "device with PCI bus id 0000:3B:00.0"
};

// One reading of one GPU. A quantity the device does not report (or failed to read) is empty.
struct GpuSample {
  double seconds = 0.0;  // steady_seconds() when it was taken
  std::optional<double> utilization_percent;
  std::optional<double> memory_used_mib;
  std::optional<double> memory_total_mib;
  std::optional<double> power_watts;
  std::optional<double> temperature_celsius;
  std::optional<double> sm_clock_mhz;
  std::optional<double> energy_millijoules;  // the board's counter since the driver loaded
};

// Owns the dlopen handle and NVML's initialisation for one device. Nothing here throws: a missing
// library, symbol or device makes available() false and reason() says which, because metrics must
// never stop a training run.
class NvmlLibrary {
 public:
  static constexpr const char* default_library_path = "libnvidia-ml.so.1";

  explicit NvmlLibrary(unsigned int device_index, const std::string& library_path = default_library_path);
  explicit NvmlLibrary(const GpuDeviceId& device, const std::string& library_path = default_library_path);
  // Uses the given entry points instead of a shared library: lets tests drive the sampler with an
  // in-process fake, since development machines have no driver.
  NvmlLibrary(const GpuDeviceId& device, const NvmlFunctions& functions);
  ~NvmlLibrary();

  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  bool available() const { return device_ != nullptr; }
  const std::string& reason() const { return reason_; }  // empty when available
  const std::string& device_name() const { return device_name_; }
  const GpuDeviceId& device_id() const { return device_id_; }

  // Reads every quantity once; an unavailable library gives a sample with only the time set.
  // Safe to call from several threads: it changes nothing here, and NVML is thread-safe.
  GpuSample read() const;

 private:
  void open_device();
  std::string describe(const char* call, nvml::Return result) const;

  GpuDeviceId device_id_;
  void* library_handle_ = nullptr;  // dlopen handle; null for injected functions
  NvmlFunctions functions_;
  bool initialized_ = false;  // nvmlInit_v2 succeeded, so nvmlShutdown is owed
  nvml::Device device_ = nullptr;
  std::string device_name_;
  std::string reason_;
};

}  // namespace phalanx::monitor
