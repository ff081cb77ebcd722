// DeviceBuffer and PinnedBuffer (see device_buffer.hpp): cudaMalloc/cudaFree and
// cudaMallocHost/cudaFreeHost behind move-only owners.
#include "device_buffer.hpp"

#include <string>
#include <utility>

#include "cuda_check.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend::cuda {

DeviceBuffer::DeviceBuffer(std::size_t bytes) {
  ensure(bytes);
}

DeviceBuffer::~DeviceBuffer() {
  release();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::ensure(std::size_t bytes) {
  if (bytes <= bytes_) return;
  release();
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, bytes);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    const std::string message =
        detail::concat("cudaMalloc of ", bytes, " bytes of scratch failed: ", cudaGetErrorString(status));
    // Out of memory is the kind the automatic batch size probes for: a scratch buffer (a
    // convolution workspace) that does not fit means the batch does not fit, like an activation.
    if (status == cudaErrorMemoryAllocation) throw Error(ErrorKind::DeviceMemory, message);
    throw_internal_error(message, __FILE__, __LINE__);
  }
  data_ = pointer;
  bytes_ = bytes;
}

void DeviceBuffer::release() noexcept {
  if (data_) PHALANX_CUDA_LOG(cudaFree(data_));
  data_ = nullptr;
  bytes_ = 0;
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) {
  PHALANX_CUDA(cudaMallocHost(&data_, bytes));
}

PinnedBuffer::~PinnedBuffer() {
  release();
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

void PinnedBuffer::release() noexcept {
  if (data_) PHALANX_CUDA_LOG(cudaFreeHost(data_));
  data_ = nullptr;
}

}  // namespace phalanx::backend::cuda
