// RAII CUDA events for the NCCL communicator and NcclGradSync: the CUDA backend's owners (ordering
// events without timing, timing events for cudaEventElapsedTime).
#pragma once

#include "../../backend/cuda/cuda_handles.hpp"

namespace phalanx::comm::nccl {

using OrderingEvent = backend::cuda::OrderingEvent;
using TimingEvent = backend::cuda::TimingEvent;

}  // namespace phalanx::comm::nccl
