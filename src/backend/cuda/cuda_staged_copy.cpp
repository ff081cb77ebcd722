// Events, not synchronisations: start_to_host returns once the copy is queued behind the compute
// stream's current position; the host waits (wait_landed) only right before it hands the bytes to
// MPI, and the copy back is queued on the compute stream, where the kernels after it need it.
#include "cuda_staged_copy.hpp"

#include "cuda_check.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend::cuda {

CudaStagedCopy::CudaStagedCopy(int device, cudaStream_t staging_stream, cudaStream_t compute_stream)
    : device_(device), staging_stream_(staging_stream), compute_stream_(compute_stream) {}

void CudaStagedCopy::start_to_host(void* host_destination, const void* device_source, std::size_t bytes) {
  PHALANX_CUDA(cudaSetDevice(device_));
  // The block is final once the kernels queued so far have run; a copy back queued earlier on the
  // compute stream is among them, so the host bytes it reads are not overwritten under it.
  PHALANX_CUDA(cudaEventRecord(final_.get(), compute_stream_));
  PHALANX_CUDA(cudaStreamWaitEvent(staging_stream_, final_.get(), 0));
  if (bytes > 0)
    PHALANX_CUDA(
        cudaMemcpyAsync(host_destination, device_source, bytes, cudaMemcpyDeviceToHost, staging_stream_));
  PHALANX_CUDA(cudaEventRecord(landed_.get(), staging_stream_));
  pending_ = true;
}

bool CudaStagedCopy::landed() {
  if (!pending_) return true;
  PHALANX_CUDA(cudaSetDevice(device_));
  const cudaError_t status = cudaEventQuery(landed_.get());
  if (status == cudaErrorNotReady) return false;
  PHALANX_CUDA(status);
  pending_ = false;
  return true;
}

void CudaStagedCopy::wait_landed() {
  if (!pending_) return;
  PHALANX_CUDA(cudaSetDevice(device_));
  PHALANX_CUDA(cudaEventSynchronize(landed_.get()));
  pending_ = false;
}

void CudaStagedCopy::start_to_device(void* device_destination, const void* host_source, std::size_t bytes) {
  PHALANX_CHECK(!pending_, "a staged copy goes back to the device only after its copy to the host landed");
  if (bytes == 0) return;
  PHALANX_CUDA(cudaSetDevice(device_));
  // From page-locked memory this is a DMA the compute stream runs in order, without the host.
  PHALANX_CUDA(
      cudaMemcpyAsync(device_destination, host_source, bytes, cudaMemcpyHostToDevice, compute_stream_));
}

}  // namespace phalanx::backend::cuda
