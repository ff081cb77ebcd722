// FiniteCheck: whether a float buffer on the device holds only finite values (the overflow test
// of dynamic loss scaling). One kernel raises a device flag, one 4-byte copy brings it back.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_buffer.hpp"

namespace phalanx::backend::cuda {

class FiniteCheck {
 public:
  FiniteCheck();
  // Enqueues the scan on `stream` and waits for its answer.
  bool all_finite(cudaStream_t stream, std::int64_t count, const float* data);

 private:
  DeviceBuffer flag_;       // int32: 0 while every element seen was finite
  PinnedBuffer host_flag_;  // where the answer lands
};

}  // namespace phalanx::backend::cuda
