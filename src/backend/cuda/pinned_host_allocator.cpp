// cudaHostAlloc / cudaFreeHost behind the Allocator interface. Portable so that the memory is
// pinned for every device of the process, whichever the calling thread has current.
#include "pinned_host_allocator.hpp"

#include <cuda_runtime_api.h>

#include "cuda_check.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend::cuda {

void* PinnedHostAllocator::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  PHALANX_CUDA(cudaSetDevice(device_));
  void* pointer = nullptr;
  const cudaError_t status = cudaHostAlloc(&pointer, bytes, cudaHostAllocPortable);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw_internal_error(detail::concat("page-locked host allocation of ", bytes, " bytes failed (",
                                        cudaGetErrorString(status), ")"),
                         __FILE__, __LINE__);
  }
  return pointer;
}

void PinnedHostAllocator::deallocate(void* pointer, std::size_t) noexcept {
  if (!pointer) return;
  PHALANX_CUDA_LOG(cudaSetDevice(device_));
  PHALANX_CUDA_LOG(cudaFreeHost(pointer));
}

}  // namespace phalanx::backend::cuda
