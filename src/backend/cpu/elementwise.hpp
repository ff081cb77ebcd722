// Element-wise ops of the CPU backend: input normalisation, ReLU, sums, scaling, the per-sample
// transpose at a flatten, and dropout.
// Plain OpenMP loops with static schedules: each element's result depends on that element only,
// so any thread count gives the same bits. Outputs may alias inputs (in-place) except where a
// function says otherwise.
#pragma once

#include <cstdint>

namespace phalanx::backend::cpu {

void fill(float* data, std::int64_t count, float value);
void normalize_images(const std::uint8_t* images, std::int64_t pixels, int channels, const float* mean,
                      const float* standard_deviation, float* output);
void relu_forward(std::int64_t count, const float* input, float* output);
void relu_backward(std::int64_t count, const float* output, const float* grad_output, float* grad_input);
void add(std::int64_t count, const float* a, const float* b, float* output);
// ReLU(a + b), bitwise add followed by relu_forward.
void add_relu(std::int64_t count, const float* a, const float* b, float* output);
void accumulate(std::int64_t count, const float* source, float* destination);
void scale(std::int64_t count, float factor, float* data);
bool all_finite(std::int64_t count, const float* data);
// Per sample [rows, columns] -> [columns, rows]; output must not alias input.
void transpose_samples(std::int64_t batch, std::int64_t rows, std::int64_t columns, const float* input,
                       float* output);
void dropout_forward(std::int64_t count, float probability, std::uint64_t seed, std::uint64_t stream,
                     const float* input, float* output, std::uint8_t* mask);
void dropout_backward(std::int64_t count, float probability, const std::uint8_t* mask,
                      const float* grad_output, float* grad_input);

// Below this many elements a loop runs on the calling thread: waking the team costs more.
constexpr std::int64_t parallel_threshold = 32768;

}  // namespace phalanx::backend::cpu
