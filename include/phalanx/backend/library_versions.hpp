// The versions of the numeric libraries this build links and this process loaded: oneDNN for CPU
// ranks; the CUDA toolkit, runtime, driver and cuDNN where the CUDA backend is built. For
// `phalanx --version` and summary.json: a bug report from a cluster needs exactly these.
#pragma once

#include <string>

namespace phalanx::backend {

struct CudaLibraryVersions {
  bool built = false;   // whether this build has the CUDA backend at all
  std::string toolkit;  // the CUDA toolkit the backend was compiled with, "13.0"
  std::string runtime;  // the CUDA runtime library loaded
  std::string driver;   // the newest CUDA the installed driver supports; "none" without a driver
  std::string cudnn;    // the cuDNN library loaded, "9.13.0"
};

// "3.2.0" of the oneDNN library loaded, with " (git HASH)" where the library knows its commit.
std::string onednn_version();
// Asks the libraries, not a device: answers on machines without a GPU too. Never throws.
CudaLibraryVersions cuda_library_versions() noexcept;

}  // namespace phalanx::backend
