// Launchers of the per-(sample, channel) and per-sample scaling kernels of the CUDA backend
// (squeeze-and-excitation, stochastic depth). `storage` is the type the activation buffers hold;
// the scale of channel_scale is an activation too. Each enqueues its kernels on `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

void launch_channel_scale_forward(cudaStream_t stream, ComputePrecision storage, std::int64_t batch,
                                  std::int64_t spatial, std::int64_t channels, const float* input,
                                  const float* scale, float* output);
// grad_input (skipped when null) = grad_output * scale; grad_scale[n, c] = sum over p of
// grad_output * input, summed in a fixed order (the same bits on every run).
void launch_channel_scale_backward(cudaStream_t stream, ComputePrecision storage, std::int64_t batch,
                                   std::int64_t spatial, std::int64_t channels, const float* input,
                                   const float* scale, const float* grad_output, float* grad_input,
                                   float* grad_scale);
void launch_scale_samples(cudaStream_t stream, ComputePrecision storage, std::int64_t batch,
                          std::int64_t sample_elements, const std::uint8_t* keep, float keep_scale,
                          const float* input, float* output);

}  // namespace phalanx::backend::cuda
