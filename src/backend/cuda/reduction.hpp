// Column sums of a row-major [rows, columns] float matrix on the device: the bias gradients of
// convolution (rows = batch * height * width) and linear layers (rows = batch). Two kernels and a
// fixed summation order instead of atomics, so the result is the same bits on every run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_buffer.hpp"
#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

class ColumnSums {
 public:
  // output[column] = sum over rows of input[row, column]; output is overwritten. `input` holds
  // elements of `storage` (an activation gradient, Backend::set_activation_precision), output fp32.
  void sum(cudaStream_t stream, ComputePrecision storage, std::int64_t rows, int columns, const float* input,
           float* output);

 private:
  DeviceBuffer partial_sums_;  // [chunks, columns] floats, grown to the largest call
};

}  // namespace phalanx::backend::cuda
