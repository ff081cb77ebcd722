// SumOfSquares: the sum of the squares of a float buffer on the device, in double (the norm that
// gradient clipping divides by). Two kernels and a fixed summation order instead of atomics, so
// the same bits give the same answer on every call; one 8-byte copy brings the answer back.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_buffer.hpp"

namespace phalanx::backend::cuda {

class SumOfSquares {
 public:
  SumOfSquares();
  // Enqueues the reduction on `stream` and waits for its answer.
  double sum(cudaStream_t stream, std::int64_t count, const float* data);

 private:
  DeviceBuffer partial_sums_;  // one double per block of the first kernel, then the total
  PinnedBuffer host_total_;    // where the answer lands
};

}  // namespace phalanx::backend::cuda
