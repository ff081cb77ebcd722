// Batch normalisation over NHWC activations held in bf16/fp16, with own kernels: PyTorch runs
// reduced-precision batch norm in its own kernels too, and cuDNN's legacy calls document their
// fast NHWC path for fp16 only. The arithmetic is the CPU backend's (src/backend/cpu/batch_norm.cpp):
// rows reduced in fixed chunks whose float partial sums, shifted by the chunk's first row, merge
// in double in a fixed order, so the statistics are accurate for large batches and for means large
// against the spread, and the same bits on every run. Each 16-bit value is widened on load and
// each result rounded once on store; statistics, gamma/beta and their gradients are fp32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_buffer.hpp"
#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

class ReducedBatchNorm {
 public:
  // `storage` is BFloat16 or Float16 (Float32 works too; the backend keeps cuDNN for it). Output
  // may be the input, grad_input may be grad_output or input (every element is read before the
  // thread that reads it writes it).
  void forward_training(cudaStream_t stream, ComputePrecision storage, const BatchNormGeometry& geometry,
                        const float* input, const float* gamma, const float* beta, float* output,
                        float* running_mean, float* running_variance, float momentum, float* saved_mean,
                        float* saved_inverse_std);
  void forward_inference(cudaStream_t stream, ComputePrecision storage, const BatchNormGeometry& geometry,
                         const float* input, const float* gamma, const float* beta, const float* running_mean,
                         const float* running_variance, float* output);
  void backward(cudaStream_t stream, ComputePrecision storage, const BatchNormGeometry& geometry,
                const float* input, const float* grad_output, const float* gamma, const float* saved_mean,
                const float* saved_inverse_std, float* grad_input, float* grad_gamma, float* grad_beta);

 private:
  // Rows per chunk of the statistics passes, and how many chunks.
  struct Chunking {
    std::int64_t rows_per_chunk;
    std::int64_t count;
  };
  // The chunking of `rows`, with the scratch of a call over it (partial sums, coefficients) sized.
  Chunking reserve_scratch(std::int64_t rows, int channels);

  DeviceBuffer partial_sums_;  // [chunks, 2, channels] floats
  DeviceBuffer coefficients_;  // [3, channels] floats: the per-channel affine map of the last pass
};

}  // namespace phalanx::backend::cuda
