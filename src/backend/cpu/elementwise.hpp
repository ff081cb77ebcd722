// Element-wise ops of the CPU backend: input normalisation, ReLU, Hardsigmoid's backward, sums,
// scaling, the per-sample transpose at a flatten, and dropout. The ops on activations come in fp32
// and in bf16 storage (activation_element.hpp; bf16 computes in fp32 and rounds once); fill, scale
// and all_finite are for fp32 buffers (weights, gradients) only.
// Plain OpenMP loops with static schedules: each element's result depends on that element only,
// so any thread count gives the same bits. Outputs may alias inputs (in-place) except where a
// function says otherwise.
#pragma once

#include <cstdint>

#include "activation_element.hpp"

namespace phalanx::backend::cpu {

void fill(float* data, std::int64_t count, float value);
void normalize_images(const std::uint8_t* images, std::int64_t pixels, int channels, const float* mean,
                      const float* standard_deviation, float* output);
void normalize_images(const std::uint8_t* images, std::int64_t pixels, int channels, const float* mean,
                      const float* standard_deviation, Bf16* output);
void relu_forward(std::int64_t count, const float* input, float* output);
void relu_forward(std::int64_t count, const Bf16* input, Bf16* output);
void relu_backward(std::int64_t count, const float* output, const float* grad_output, float* grad_input);
void relu_backward(std::int64_t count, const Bf16* output, const Bf16* grad_output, Bf16* grad_input);
// grad_output / 6 where 0 < output < 1, else 0: Hardsigmoid's backward from its output (oneDNN
// has no hardsigmoid algorithm that reads the output; activations.cpp runs the rest).
void hardsigmoid_backward(std::int64_t count, const float* output, const float* grad_output,
                          float* grad_input);
void hardsigmoid_backward(std::int64_t count, const Bf16* output, const Bf16* grad_output, Bf16* grad_input);
void add(std::int64_t count, const float* a, const float* b, float* output);
void add(std::int64_t count, const Bf16* a, const Bf16* b, Bf16* output);
// ReLU(a + b), bitwise add followed by relu_forward (in bf16: the float sum rounded once).
void add_relu(std::int64_t count, const float* a, const float* b, float* output);
void add_relu(std::int64_t count, const Bf16* a, const Bf16* b, Bf16* output);
void accumulate(std::int64_t count, const float* source, float* destination);
void accumulate(std::int64_t count, const Bf16* source, Bf16* destination);
void scale(std::int64_t count, float factor, float* data);
bool all_finite(std::int64_t count, const float* data);
// In double, over fixed blocks of elements whose partial sums are added in block order: the same
// bits for any thread count.
double sum_of_squares(std::int64_t count, const float* data);
// average = fma(decay, average, (1 - decay) * source): one rounding of the sum, as on CUDA devices.
void moving_average(std::int64_t count, float decay, const float* source, float* average);
// Per sample [rows, columns] -> [columns, rows]; output must not alias input.
void transpose_samples(std::int64_t batch, std::int64_t rows, std::int64_t columns, const float* input,
                       float* output);
void transpose_samples(std::int64_t batch, std::int64_t rows, std::int64_t columns, const Bf16* input,
                       Bf16* output);
void dropout_forward(std::int64_t count, float probability, std::uint64_t seed, std::uint64_t stream,
                     const float* input, float* output, std::uint8_t* mask);
void dropout_forward(std::int64_t count, float probability, std::uint64_t seed, std::uint64_t stream,
                     const Bf16* input, Bf16* output, std::uint8_t* mask);
void dropout_backward(std::int64_t count, float probability, const std::uint8_t* mask,
                      const float* grad_output, float* grad_input);
void dropout_backward(std::int64_t count, float probability, const std::uint8_t* mask,
                      const Bf16* grad_output, Bf16* grad_input);

// Below this many elements a loop runs on the calling thread: waking the team costs more.
constexpr std::int64_t parallel_threshold = 32768;

}  // namespace phalanx::backend::cpu
