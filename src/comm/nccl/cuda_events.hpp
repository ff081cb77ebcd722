// RAII CUDA events for the NCCL communicator and NcclGradSync, built on the CUDA backend's
// LibraryObject owner: ordering events skip timing (cheaper to record and wait on), timing
// events keep it for cudaEventElapsedTime. Construction throws; destruction only logs.
#pragma once

#include "../../backend/cuda/cuda_handles.hpp"

namespace phalanx::comm::nccl {

struct OrderingEventTraits {
  using Handle = cudaEvent_t;
  static void create(Handle* handle) {
    PHALANX_CUDA(cudaEventCreateWithFlags(handle, cudaEventDisableTiming));
  }
  static void destroy(Handle handle) noexcept { PHALANX_CUDA_LOG(cudaEventDestroy(handle)); }
};
struct TimingEventTraits {
  using Handle = cudaEvent_t;
  static void create(Handle* handle) { PHALANX_CUDA(cudaEventCreateWithFlags(handle, cudaEventDefault)); }
  static void destroy(Handle handle) noexcept { PHALANX_CUDA_LOG(cudaEventDestroy(handle)); }
};

using OrderingEvent = backend::cuda::LibraryObject<OrderingEventTraits>;
using TimingEvent = backend::cuda::LibraryObject<TimingEventTraits>;

}  // namespace phalanx::comm::nccl
