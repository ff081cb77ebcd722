// Launchers of the element-wise kernels of the CUDA backend: fill, input normalisation, ReLU and
// the other activations, sums, scaling, bias rows, the per-sample transpose, dropout. Each enqueues
// one kernel on `stream` and returns at once; each element's result depends on that element only,
// so results are bitwise those of the CPU backend's loops wherever the arithmetic is the same.
//
// `storage` is the type the activation buffers hold (Backend::set_activation_precision): the
// float* of those launchers point at elements of that type. fill, scale and the bias rows work on
// fp32 buffers (parameters, gradients) only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

void launch_fill(cudaStream_t stream, float* data, std::int64_t count, float value);
void launch_normalize_images(cudaStream_t stream, ComputePrecision storage, const std::uint8_t* images,
                             std::int64_t pixels, int channels, const float* mean,
                             const float* standard_deviation, float* output);
void launch_relu_forward(cudaStream_t stream, ComputePrecision storage, std::int64_t count,
                         const float* input, float* output);
void launch_relu_backward(cudaStream_t stream, ComputePrecision storage, std::int64_t count,
                          const float* output, const float* grad_output, float* grad_input);
// Backend::activation_forward and activation_backward (the formulas: activation_functions.hpp).
void launch_activation_forward(cudaStream_t stream, ComputePrecision storage, ActivationKind kind,
                               std::int64_t count, const float* input, float* output);
void launch_activation_backward(cudaStream_t stream, ComputePrecision storage, ActivationKind kind,
                                std::int64_t count, const float* input, const float* output,
                                const float* grad_output, float* grad_input);
void launch_add(cudaStream_t stream, ComputePrecision storage, std::int64_t count, const float* a,
                const float* b, float* output);
// ReLU(a + b) in one pass (a residual block's sum and its ReLU).
void launch_add_relu(cudaStream_t stream, ComputePrecision storage, std::int64_t count, const float* a,
                     const float* b, float* output);
void launch_accumulate(cudaStream_t stream, ComputePrecision storage, std::int64_t count, const float* source,
                       float* destination);
void launch_scale(cudaStream_t stream, std::int64_t count, float factor, float* data);
// average = fma(decay, average, (1 - decay) * source) in fp32 (the CPU backend's bits).
void launch_moving_average(cudaStream_t stream, std::int64_t count, float decay, const float* source,
                           float* average);
// data[row, column] += bias[column] over a row-major [rows, columns] matrix (conv and linear bias).
void launch_add_bias_rows(cudaStream_t stream, std::int64_t rows, int columns, const float* bias,
                          float* data);

// Per sample [rows, columns] -> [columns, rows] of `storage` elements (conv weights: fp32);
// output must not alias input.
void launch_transpose_samples(cudaStream_t stream, ComputePrecision storage, std::int64_t batch,
                              std::int64_t rows, std::int64_t columns, const float* input, float* output);

// Dropout with the CPU backend's mask: element i kept when (philox4x32(seed, stream, i / 4)[i % 4]
// >> 8) >= ceil(p * 2^24).
void launch_dropout_forward(cudaStream_t stream, ComputePrecision storage, std::int64_t count,
                            float probability, std::uint64_t seed, std::uint64_t random_stream,
                            const float* input, float* output, std::uint8_t* mask);
void launch_dropout_backward(cudaStream_t stream, ComputePrecision storage, std::int64_t count,
                             float probability, const std::uint8_t* mask, const float* grad_output,
                             float* grad_input);

}  // namespace phalanx::backend::cuda
