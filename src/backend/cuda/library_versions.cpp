// cuda_library_versions: what the CUDA backend was compiled with and what the process loaded. The
// runtime, driver and cuDNN queries need no device, so a CPU-only node of a CUDA build answers too.
#include "phalanx/backend/library_versions.hpp"

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

namespace phalanx::backend {
namespace {

// CUDA encodes 13.0 as 13000 (major * 1000 + minor * 10).
std::string cuda_version_text(int encoded) {
  return std::to_string(encoded / 1000) + "." + std::to_string(encoded % 1000 / 10);
}

}  // namespace

CudaLibraryVersions cuda_library_versions() noexcept {
  CudaLibraryVersions versions;
  try {
    versions.built = true;
    versions.toolkit = cuda_version_text(CUDART_VERSION);
    int runtime = 0;
    versions.runtime =
        cudaRuntimeGetVersion(&runtime) == cudaSuccess ? cuda_version_text(runtime) : "unknown";
    int driver = 0;
    versions.driver =
        cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0 ? cuda_version_text(driver) : "none";
    (void)cudaGetLastError();  // neither query may leave an error for later calls to find
    // cuDNN 9 encodes 9.13.0 as 91300 (major * 10000 + minor * 100 + patch).
    const auto cudnn = static_cast<int>(cudnnGetVersion());
    versions.cudnn = std::to_string(cudnn / 10000) + "." + std::to_string(cudnn % 10000 / 100) + "." +
                     std::to_string(cudnn % 100);
  } catch (...) {
    // Only string allocation can throw here: report what was gathered.
  }
  return versions;
}

}  // namespace phalanx::backend
