// Per-(sample, channel) and per-sample scaling loops of the CPU backend (see channel_scale.hpp).
// Every result depends on its own sample only and sums run in a fixed order, so any thread count
// gives the same bits.
#include "channel_scale.hpp"

#include <vector>

#include "elementwise.hpp"

namespace phalanx::backend::cpu {

namespace {

template <typename Element>
void channel_scale_forward_of(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                              const Element* input, const Element* scale, Element* output) {
#pragma omp parallel for collapse(2) schedule(static) if (batch * spatial * channels >= parallel_threshold)
  for (std::int64_t sample = 0; sample < batch; ++sample)
    for (std::int64_t position = 0; position < spatial; ++position) {
      const std::int64_t first = (sample * spatial + position) * channels;
      const Element* sample_scale = scale + sample * channels;
#pragma omp simd
      for (std::int64_t channel = 0; channel < channels; ++channel)
        narrow_into(output[first + channel], widen(input[first + channel]) * widen(sample_scale[channel]));
    }
}

template <typename Element>
void channel_scale_backward_of(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                               const Element* input, const Element* scale, const Element* grad_output,
                               Element* grad_input, Element* grad_scale) {
  if (grad_input) channel_scale_forward_of(batch, spatial, channels, grad_output, scale, grad_input);
    // One sample per iteration: its channel sums accumulate over the positions in order.
#pragma omp parallel for schedule(static) if (batch * spatial * channels >= parallel_threshold)
  for (std::int64_t sample = 0; sample < batch; ++sample) {
    std::vector<float> sums(static_cast<std::size_t>(channels), 0.0f);
    float* __restrict sum = sums.data();
    for (std::int64_t position = 0; position < spatial; ++position) {
      const std::int64_t first = (sample * spatial + position) * channels;
#pragma omp simd
      for (std::int64_t channel = 0; channel < channels; ++channel)
        sum[channel] += widen(grad_output[first + channel]) * widen(input[first + channel]);
    }
    for (std::int64_t channel = 0; channel < channels; ++channel)
      narrow_into(grad_scale[sample * channels + channel], sum[channel]);
  }
}

template <typename Element>
void scale_samples_of(std::int64_t batch, std::int64_t sample_elements, const std::uint8_t* keep,
                      float keep_scale, const Element* input, Element* output) {
#pragma omp parallel for collapse(2) schedule(static) if (batch * sample_elements >= parallel_threshold)
  for (std::int64_t sample = 0; sample < batch; ++sample)
    for (std::int64_t index = 0; index < sample_elements; ++index) {
      const std::int64_t element = sample * sample_elements + index;
      narrow_into(output[element], keep[sample] ? widen(input[element]) * keep_scale : 0.0f);
    }
}

}  // namespace

void channel_scale_forward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                           const float* input, const float* scale, float* output) {
  channel_scale_forward_of(batch, spatial, channels, input, scale, output);
}
void channel_scale_forward(std::int64_t batch, std::int64_t spatial, std::int64_t channels, const Bf16* input,
                           const Bf16* scale, Bf16* output) {
  channel_scale_forward_of(batch, spatial, channels, input, scale, output);
}

void channel_scale_backward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                            const float* input, const float* scale, const float* grad_output,
                            float* grad_input, float* grad_scale) {
  channel_scale_backward_of(batch, spatial, channels, input, scale, grad_output, grad_input, grad_scale);
}
void channel_scale_backward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                            const Bf16* input, const Bf16* scale, const Bf16* grad_output, Bf16* grad_input,
                            Bf16* grad_scale) {
  channel_scale_backward_of(batch, spatial, channels, input, scale, grad_output, grad_input, grad_scale);
}

void scale_samples(std::int64_t batch, std::int64_t sample_elements, const std::uint8_t* keep,
                   float keep_scale, const float* input, float* output) {
  scale_samples_of(batch, sample_elements, keep, keep_scale, input, output);
}
void scale_samples(std::int64_t batch, std::int64_t sample_elements, const std::uint8_t* keep,
                   float keep_scale, const Bf16* input, Bf16* output) {
  scale_samples_of(batch, sample_elements, keep, keep_scale, input, output);
}

}  // namespace phalanx::backend::cpu
