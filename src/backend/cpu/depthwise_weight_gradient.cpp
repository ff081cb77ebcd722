// depthwise_weight_gradient (see depthwise_weight_gradient.hpp). Work items are (block of samples,
// block of channels): each sums its samples into its own slice of a partial buffer laid out
// [sample block][tap][channel], channels innermost so the multiply-adds vectorise over channels;
// a second pass adds the sample blocks in order and transposes to torch's [channel][tap].
#include "depthwise_weight_gradient.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace phalanx::backend::cpu {

namespace {

// Samples per partial sum: small enough that a rank's batch gives every thread work, large enough
// that the partial buffer and the final pass stay small next to the activations.
constexpr std::int64_t samples_per_block = 4;
// Channels per work item: 64 floats are eight AVX2 vectors, and a 3x3 kernel's 9 x 64 partial
// sums stay in L1 while the item walks its samples.
constexpr std::int64_t channels_per_block = 64;

}  // namespace

bool is_depthwise(const ConvolutionGeometry& geometry) {
  return geometry.groups > 1 && geometry.groups == geometry.in_channels &&
         geometry.out_channels == geometry.in_channels;
}

void depthwise_weight_gradient(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                               float* grad_weight, float* grad_bias, std::vector<float>& partial_sums) {
  const std::int64_t batch = geometry.batch, channels = geometry.in_channels;
  const std::int64_t in_height = geometry.in_height, in_width = geometry.in_width;
  const std::int64_t out_height = geometry.out_height(), out_width = geometry.out_width();
  const std::int64_t kernel_height = geometry.kernel_height, kernel_width = geometry.kernel_width;
  const std::int64_t taps = kernel_height * kernel_width;
  const std::int64_t stride = geometry.stride, padding = geometry.padding, dilation = geometry.dilation;
  const std::int64_t sample_blocks = (batch + samples_per_block - 1) / samples_per_block;
  const std::int64_t channel_blocks = (channels + channels_per_block - 1) / channels_per_block;
  // [sample block][tap + 1][channel]: the last "tap" row holds the bias sums.
  const std::int64_t block_stride = (taps + 1) * channels;
  // Every work item zeroes its own slice before summing into it: no fill here.
  const auto needed = static_cast<std::size_t>(sample_blocks * block_stride);
  if (partial_sums.size() < needed) partial_sums.resize(needed);
  float* const partial = partial_sums.data();

#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t sample_block = 0; sample_block < sample_blocks; ++sample_block)
    for (std::int64_t channel_block = 0; channel_block < channel_blocks; ++channel_block) {
      const std::int64_t first_channel = channel_block * channels_per_block;
      const std::int64_t width = std::min(channels_per_block, channels - first_channel);
      float* const sums = partial + sample_block * block_stride + first_channel;
      for (std::int64_t tap = 0; tap <= taps; ++tap) std::fill_n(sums + tap * channels, width, 0.0f);
      const std::int64_t last_sample = std::min(batch, (sample_block + 1) * samples_per_block);
      for (std::int64_t sample = sample_block * samples_per_block; sample < last_sample; ++sample)
        for (std::int64_t out_row = 0; out_row < out_height; ++out_row)
          for (std::int64_t out_column = 0; out_column < out_width; ++out_column) {
            const float* __restrict gradient =
                grad_output + ((sample * out_height + out_row) * out_width + out_column) * channels + first_channel;
            float* __restrict bias_sum = sums + taps * channels;
#pragma omp simd
            for (std::int64_t channel = 0; channel < width; ++channel) bias_sum[channel] += gradient[channel];
            for (std::int64_t kernel_row = 0; kernel_row < kernel_height; ++kernel_row) {
              const std::int64_t row = out_row * stride - padding + kernel_row * dilation;
              if (row < 0 || row >= in_height) continue;
              for (std::int64_t kernel_column = 0; kernel_column < kernel_width; ++kernel_column) {
                const std::int64_t column = out_column * stride - padding + kernel_column * dilation;
                if (column < 0 || column >= in_width) continue;
                const float* __restrict pixel =
                    input + ((sample * in_height + row) * in_width + column) * channels + first_channel;
                float* __restrict tap_sum = sums + (kernel_row * kernel_width + kernel_column) * channels;
#pragma omp simd
                for (std::int64_t channel = 0; channel < width; ++channel)
                  tap_sum[channel] += gradient[channel] * pixel[channel];
              }
            }
          }
    }

  // Sample blocks added in order: the same bits for any thread count.
#pragma omp parallel for schedule(static) if (channels * taps * sample_blocks >= 32768)
  for (std::int64_t channel = 0; channel < channels; ++channel) {
    for (std::int64_t tap = 0; tap <= taps; ++tap) {
      float total = 0.0f;
      for (std::int64_t sample_block = 0; sample_block < sample_blocks; ++sample_block)
        total += partial[sample_block * block_stride + tap * channels + channel];
      if (tap < taps)
        grad_weight[channel * taps + tap] = total;
      else if (grad_bias)
        grad_bias[channel] = total;
    }
  }
}

}  // namespace phalanx::backend::cpu
