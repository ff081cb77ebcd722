// CudaUpload: a host-to-device copy on the backend's copy stream, ordered before the compute
// stream's later work by an event, and timed by events: how long the copy took, and how long the
// compute stream (having reached the point where it needs the data) still had to wait for it.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_handles.hpp"
#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

class CudaUpload final : public Upload {
 public:
  CudaUpload(int device, cudaStream_t copy_stream, cudaStream_t compute_stream);

  void start(const std::vector<UploadPart>& parts) override;
  void order_compute_after() override;
  void wait_host() override;
  UploadTiming timing() override;
  void order_next_start_after_compute() override;

 private:
  int device_;
  cudaStream_t copy_stream_, compute_stream_;
  TimingEvent copy_started_, copy_finished_, compute_ready_;
  OrderingEvent compute_released_;  // the compute stream has read the destination buffers
  bool started_ = false, ordered_ = false, release_pending_ = false;
  std::size_t bytes_ = 0;
};

}  // namespace phalanx::backend::cuda
