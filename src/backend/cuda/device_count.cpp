// cuda_device_count and cuda_visible_devices: the CUDA calls every rank makes, GPU or not, to decide
// its device. On a machine without a GPU the runtime answers cudaGetDeviceCount with an error
// ("driver version is insufficient", "no CUDA-capable device") rather than zero devices; every
// error means zero here.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "phalanx/backend/cuda_backend.hpp"

namespace phalanx::backend {

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it so later calls do not see it
    return 0;
  }
  return count;
}

std::vector<std::string> cuda_visible_devices() noexcept {
  std::vector<std::string> devices;
  const int count = cuda_device_count();
  try {
    for (int device = 0; device < count; ++device) {
      char bus_id[32] = {};
      if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device) != cudaSuccess) {
        (void)cudaGetLastError();
        return {};  // a device that cannot say which it is cannot be told apart from the others
      }
      devices.emplace_back(bus_id);
    }
  } catch (...) {
    return {};  // out of memory for a few strings: no GPU rather than a crash
  }
  return devices;
}

}  // namespace phalanx::backend
