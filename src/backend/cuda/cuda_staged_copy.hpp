// CudaStagedCopy: a gradient bucket's copy to page-locked host memory on the backend's staging
// stream, ordered after the compute stream by an event (the host goes on at once), and its copy
// back on the compute stream, so the optimizer and later kernels run after it without a host wait.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_handles.hpp"
#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

class CudaStagedCopy final : public StagedCopy {
 public:
  CudaStagedCopy(int device, cudaStream_t staging_stream, cudaStream_t compute_stream);

  void start_to_host(void* host_destination, const void* device_source, std::size_t bytes) override;
  bool landed() override;
  void wait_landed() override;
  void start_to_device(void* device_destination, const void* host_source, std::size_t bytes) override;

 private:
  int device_;
  cudaStream_t staging_stream_, compute_stream_;
  OrderingEvent final_;   // compute stream: the block's kernels have run
  OrderingEvent landed_;  // staging stream: the copy to the host has run
  bool pending_ = false;  // a copy to the host was started and has not been seen landed
};

}  // namespace phalanx::backend::cuda
