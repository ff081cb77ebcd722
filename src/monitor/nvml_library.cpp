// Loads NVML with dlopen, resolves the entry points the GPU monitor needs and reads one device.
// Every failure becomes a reason string instead of an exception: the monitor runs beside
// training, and a node without the driver (or with an old one) must still train.
#include "phalanx/monitor/nvml_library.hpp"

#include <dlfcn.h>

#include <cstring>
#include <string>

#include "phalanx/monitor/measurement.hpp"

namespace phalanx::monitor {
namespace {

constexpr double bytes_per_mib = 1024.0 * 1024.0;

// dlsym returns void*; converting it to a function pointer is the documented POSIX use.
template <typename Function>
bool resolve(void* handle, const char* symbol, Function& function, std::string& missing) {
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    if (!missing.empty()) missing += ", ";
    missing += symbol;
    return false;
  }
  function = reinterpret_cast<Function>(address);
  return true;
}

}  // namespace

std::string GpuDeviceId::describe() const {
  return pci_bus_id.empty() ? "device " + std::to_string(index) : "device with PCI bus id " + pci_bus_id;
}

NvmlLibrary::NvmlLibrary(unsigned int device_index, const std::string& library_path)
    : NvmlLibrary(GpuDeviceId{device_index, {}}, library_path) {}

NvmlLibrary::NvmlLibrary(const GpuDeviceId& device, const std::string& library_path) : device_id_(device) {
  // RTLD_LOCAL keeps NVML's symbols out of the global namespace of the process.
  library_handle_ = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_handle_ == nullptr) {
    const char* error = dlerror();
    reason_ = "NVML library " + library_path + " (libnvidia-ml, part of the NVIDIA driver) not loaded: " +
              (error != nullptr ? error : "unknown dlopen error");
    return;
  }
  std::string missing;
  resolve(library_handle_, "nvmlInit_v2", functions_.init, missing);
  resolve(library_handle_, "nvmlShutdown", functions_.shutdown, missing);
  resolve(library_handle_, "nvmlDeviceGetHandleByIndex_v2", functions_.get_handle_by_index, missing);
  // The readings are optional one by one: a driver that drops or renames one (NVML deprecates
  // calls in favour of versioned ones) loses that quantity, not the whole monitor.
  std::string optional_missing;
  resolve(library_handle_, "nvmlErrorString", functions_.error_string, optional_missing);
  resolve(library_handle_, "nvmlDeviceGetUtilizationRates", functions_.get_utilization_rates,
          optional_missing);
  resolve(library_handle_, "nvmlDeviceGetMemoryInfo", functions_.get_memory_info, optional_missing);
  resolve(library_handle_, "nvmlDeviceGetPowerUsage", functions_.get_power_usage, optional_missing);
  resolve(library_handle_, "nvmlDeviceGetTemperature", functions_.get_temperature, optional_missing);
  resolve(library_handle_, "nvmlDeviceGetClockInfo", functions_.get_clock_info, optional_missing);
  resolve(library_handle_, "nvmlDeviceGetTotalEnergyConsumption", functions_.get_total_energy_consumption,
          optional_missing);
  resolve(library_handle_, "nvmlDeviceGetName", functions_.get_name, optional_missing);
  resolve(library_handle_, "nvmlDeviceGetHandleByPciBusId_v2", functions_.get_handle_by_pci_bus_id,
          device_id_.pci_bus_id.empty() ? optional_missing : missing);
  if (!missing.empty()) {
    reason_ = "NVML library " + library_path + " (libnvidia-ml) lacks " + missing;
    return;
  }
  open_device();
}

NvmlLibrary::NvmlLibrary(const GpuDeviceId& device, const NvmlFunctions& functions)
    : device_id_(device), functions_(functions) {
  const bool complete = functions_.init && functions_.shutdown && functions_.get_handle_by_index &&
                        (device_id_.pci_bus_id.empty() || functions_.get_handle_by_pci_bus_id);
  if (!complete) {
    reason_ = "NVML (libnvidia-ml) function table is incomplete";
    return;
  }
  open_device();
}

NvmlLibrary::~NvmlLibrary() {
  if (initialized_) functions_.shutdown();
  if (library_handle_ != nullptr) dlclose(library_handle_);
}

void NvmlLibrary::open_device() {
  const nvml::Return init_result = functions_.init();
  if (init_result != nvml::success) {
    reason_ = describe("nvmlInit_v2", init_result);
    return;
  }
  initialized_ = true;
  nvml::Device device = nullptr;
  const bool by_bus_id = !device_id_.pci_bus_id.empty();
  const nvml::Return handle_result =
      by_bus_id ? functions_.get_handle_by_pci_bus_id(device_id_.pci_bus_id.c_str(), &device)
                : functions_.get_handle_by_index(device_id_.index, &device);
  if (handle_result != nvml::success || device == nullptr) {
    reason_ = describe(by_bus_id ? "nvmlDeviceGetHandleByPciBusId_v2" : "nvmlDeviceGetHandleByIndex_v2",
                       handle_result) +
              " for " + device_id_.describe();
    return;
  }
  char name[nvml::device_name_buffer_size] = {};
  if (functions_.get_name && functions_.get_name(device, name, sizeof(name)) == nvml::success) {
    name[sizeof(name) - 1] = '\0';  // never trust a C string to be terminated
    device_name_ = name;
  }
  device_ = device;
}

std::string NvmlLibrary::describe(const char* call, nvml::Return result) const {
  std::string text =
      std::string("NVML (libnvidia-ml) ") + call + " failed with code " + std::to_string(result);
  if (functions_.error_string != nullptr) {
    const char* message = functions_.error_string(result);
    if (message != nullptr) text += std::string(" (") + message + ")";
  }
  return text;
}

GpuSample NvmlLibrary::read() const {
  GpuSample sample;
  sample.seconds = steady_seconds();
  if (device_ == nullptr) return sample;
  nvml::Utilization utilization{};
  if (functions_.get_utilization_rates &&
      functions_.get_utilization_rates(device_, &utilization) == nvml::success)
    sample.utilization_percent = utilization.gpu;
  nvml::Memory memory{};
  if (functions_.get_memory_info && functions_.get_memory_info(device_, &memory) == nvml::success) {
    sample.memory_used_mib = static_cast<double>(memory.used) / bytes_per_mib;
    sample.memory_total_mib = static_cast<double>(memory.total) / bytes_per_mib;
  }
  unsigned int milliwatts = 0;
  if (functions_.get_power_usage && functions_.get_power_usage(device_, &milliwatts) == nvml::success)
    sample.power_watts = milliwatts / 1000.0;
  unsigned int celsius = 0;
  if (functions_.get_temperature &&
      functions_.get_temperature(device_, nvml::temperature_sensor_gpu, &celsius) == nvml::success)
    sample.temperature_celsius = celsius;
  unsigned int megahertz = 0;
  if (functions_.get_clock_info &&
      functions_.get_clock_info(device_, nvml::clock_type_sm, &megahertz) == nvml::success)
    sample.sm_clock_mhz = megahertz;
  unsigned long long millijoules = 0;
  if (functions_.get_total_energy_consumption &&
      functions_.get_total_energy_consumption(device_, &millijoules) == nvml::success)
    sample.energy_millijoules = static_cast<double>(millijoules);
  return sample;
}

}  // namespace phalanx::monitor
