// The CUDA entry points of a build without the CUDA backend (PHALANX_CUDA=OFF or no toolkit):
// such a build has no GPU devices, and asking for one is a usage error that says why. This keeps
// device selection free of #ifdefs: it asks cuda_device_count() in every build.
#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/backend/cuda_transfer.hpp"
#include "phalanx/backend/library_versions.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend {

int cuda_device_count() noexcept {
  return 0;
}

std::vector<std::string> cuda_visible_devices() noexcept {
  return {};
}

std::unique_ptr<Backend> make_cuda_backend(int) {
  throw_input_error(
      "device: cuda was asked for, but this phalanx build has no CUDA backend (configure with the CUDA "
      "toolkit, cuDNN and NCCL present, or set device: cpu)");
}

CUstream_st* cuda_stream(Backend& backend) {
  throw_internal_error(backend.name() + " is not a CUDA backend", __FILE__, __LINE__);
}

int cuda_device(const Backend& backend) {
  throw_internal_error(backend.name() + " is not a CUDA backend", __FILE__, __LINE__);
}

std::int64_t cuda_host_waits(const Backend& backend) {
  throw_internal_error(backend.name() + " is not a CUDA backend", __FILE__, __LINE__);
}

bool cuda_work_pending(Backend& backend) {
  throw_internal_error(backend.name() + " is not a CUDA backend", __FILE__, __LINE__);
}

std::string cuda_pci_bus_id(const Backend& backend) {
  throw_internal_error(backend.name() + " is not a CUDA backend", __FILE__, __LINE__);
}

}  // namespace phalanx::backend

namespace phalanx::backend {

// Host-to-device bandwidth needs a GPU.
std::vector<TransferResult> measure_host_to_device(int, const std::vector<std::size_t>&, int) {
  throw_input_error(
      "bench transfer: this phalanx build has no CUDA backend (it measures host-to-device copies; configure "
      "with the CUDA toolkit, cuDNN and NCCL present)");
}

}  // namespace phalanx::backend

namespace phalanx::backend {

// No CUDA backend in this build: nothing was compiled against CUDA, nothing of it is loaded.
CudaLibraryVersions cuda_library_versions() noexcept {
  return {};
}

}  // namespace phalanx::backend
