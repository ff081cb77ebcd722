// Events, not synchronisations: start() returns once the copies are queued; the compute stream
// waits on copy_finished_ on the device only; the host waits (wait_host) just before the loader
// may reuse the pinned slot, by which time the copy has long finished.
#include "cuda_upload.hpp"

#include <algorithm>

#include "phalanx/core/error.hpp"

namespace phalanx::backend::cuda {

CudaUpload::CudaUpload(int device, cudaStream_t copy_stream, cudaStream_t compute_stream)
    : device_(device), copy_stream_(copy_stream), compute_stream_(compute_stream) {}

void CudaUpload::start(const std::vector<UploadPart>& parts) {
  PHALANX_CUDA(cudaSetDevice(device_));
  bytes_ = 0;
  // The destination buffers may still be read by kernels queued before the release: the copy
  // waits for them on the device, so a staging buffer is never overwritten under a reader.
  if (release_pending_) PHALANX_CUDA(cudaStreamWaitEvent(copy_stream_, compute_released_.get(), 0));
  release_pending_ = false;
  PHALANX_CUDA(cudaEventRecord(copy_started_.get(), copy_stream_));
  for (const UploadPart& part : parts) {
    if (part.bytes == 0) continue;
    PHALANX_CUDA(cudaMemcpyAsync(part.device_destination, part.host_source, part.bytes,
                                 cudaMemcpyHostToDevice, copy_stream_));
    bytes_ += part.bytes;
  }
  PHALANX_CUDA(cudaEventRecord(copy_finished_.get(), copy_stream_));
  started_ = true;
  ordered_ = false;
}

void CudaUpload::order_compute_after() {
  PHALANX_CHECK(started_, "no upload to wait for");
  PHALANX_CUDA(cudaSetDevice(device_));
  // The compute stream's position when it asks for the data: the copy's exposed part is how much
  // later than this the copy finished.
  PHALANX_CUDA(cudaEventRecord(compute_ready_.get(), compute_stream_));
  PHALANX_CUDA(cudaStreamWaitEvent(compute_stream_, copy_finished_.get(), 0));
  ordered_ = true;
}

void CudaUpload::order_next_start_after_compute() {
  PHALANX_CUDA(cudaSetDevice(device_));
  PHALANX_CUDA(cudaEventRecord(compute_released_.get(), compute_stream_));
  release_pending_ = true;
}

void CudaUpload::wait_host() {
  if (started_) PHALANX_CUDA(cudaEventSynchronize(copy_finished_.get()));
}

UploadTiming CudaUpload::timing() {
  UploadTiming timing;
  if (!started_ || !ordered_) return timing;
  PHALANX_CUDA(cudaEventSynchronize(copy_finished_.get()));
  PHALANX_CUDA(cudaEventSynchronize(compute_ready_.get()));
  float copy_milliseconds = 0, gap_milliseconds = 0;
  PHALANX_CUDA(cudaEventElapsedTime(&copy_milliseconds, copy_started_.get(), copy_finished_.get()));
  PHALANX_CUDA(cudaEventElapsedTime(&gap_milliseconds, compute_ready_.get(), copy_finished_.get()));
  timing.copy_seconds = copy_milliseconds / 1000.0;
  timing.exposed_seconds = std::clamp(gap_milliseconds / 1000.0, 0.0, timing.copy_seconds);
  timing.bytes = bytes_;
  return timing;
}

}  // namespace phalanx::backend::cuda
