// Scaling of NHWC activations per (sample, channel), as squeeze-and-excitation does, and per
// sample, as stochastic depth does, for the CPU backend in fp32 and bf16 storage (each product
// computed in float and rounded once).
#pragma once

#include <cstdint>

#include "activation_element.hpp"

namespace phalanx::backend::cpu {

// output[n, p, c] = input[n, p, c] * scale[n, c]; output may alias input.
void channel_scale_forward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                           const float* input, const float* scale, float* output);
void channel_scale_forward(std::int64_t batch, std::int64_t spatial, std::int64_t channels, const Bf16* input,
                           const Bf16* scale, Bf16* output);
// grad_input = grad_output * scale (skipped when null); grad_scale[n, c] = sum over p of
// grad_output[n, p, c] * input[n, p, c], summed in order of p in float.
void channel_scale_backward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                            const float* input, const float* scale, const float* grad_output,
                            float* grad_input, float* grad_scale);
void channel_scale_backward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                            const Bf16* input, const Bf16* scale, const Bf16* grad_output, Bf16* grad_input,
                            Bf16* grad_scale);
// output[n, i] = keep[n] ? input[n, i] * keep_scale : 0; output may alias input.
void scale_samples(std::int64_t batch, std::int64_t sample_elements, const std::uint8_t* keep,
                   float keep_scale, const float* input, float* output);
void scale_samples(std::int64_t batch, std::int64_t sample_elements, const std::uint8_t* keep,
                   float keep_scale, const Bf16* input, Bf16* output);

}  // namespace phalanx::backend::cpu
