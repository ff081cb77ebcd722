// cuda_device_count: the one CUDA call every rank makes, GPU or not, to decide its device. On a
// machine without a GPU the runtime answers cudaGetDeviceCount with an error ("driver version is
// insufficient", "no CUDA-capable device") rather than zero devices; every error means zero here.
#include <cuda_runtime_api.h>

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

}  // namespace phalanx::backend
