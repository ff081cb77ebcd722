// Batch normalisation with own OpenMP loops rather than oneDNN: oneDNN keeps the variance where
// the interface saves 1/sqrt(var+eps) (converting back loses bits), and with channels last the
// per-channel reductions are plain vectorised row sums. Rows are reduced in fixed blocks of 256
// whose float partial sums are merged in block order in double, so results are bitwise the same
// for any thread count, and accurate for large batches and for means large against the spread.
// Under bf16 activations (set_storage) the same loops read bf16 input and grad_output, widened to
// float, and round output and grad_input once; statistics, gamma, beta and their gradients stay
// fp32 (the float instantiation is the fp32 path, see activation_element.hpp).
#include "batch_norm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "elementwise.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend::cpu {

namespace {

// Rows per reduction block: small enough that a float sum of one block stays accurate and the
// block stays in cache for its second pass, large enough that merging blocks is negligible.
constexpr std::int64_t block_rows = 256;

std::int64_t block_count(std::int64_t rows) {
  return (rows + block_rows - 1) / block_rows;
}

// output[row, c] = (input[row, c] - center[c]) * scale[c] + offset[c]. Subtracting a typical
// value first keeps precision when a channel's mean is large against its spread. Output may
// be the input (in place).
template <typename Element>
void affine_per_channel(std::int64_t rows, int channels, const Element* input, const float* __restrict center,
                        const float* __restrict scale, const float* __restrict offset, Element* output) {
#pragma omp parallel for schedule(static) if (rows * channels >= parallel_threshold)
  for (std::int64_t row = 0; row < rows; ++row) {
    const Element* input_row = input + row * channels;
    Element* output_row = output + row * channels;
#pragma omp simd
    for (int channel = 0; channel < channels; ++channel)
      narrow_into(output_row[channel],
                  (widen(input_row[channel]) - center[channel]) * scale[channel] + offset[channel]);
  }
}

// The same with the ReLU that follows the layer applied as each value is written, as relu_forward
// computes it (`x < 0 ? 0 : x`, NaN stays NaN): one pass over the activations instead of two.
template <typename Element>
void affine_relu_per_channel(std::int64_t rows, int channels, const Element* input,
                             const float* __restrict center, const float* __restrict scale,
                             const float* __restrict offset, Element* output) {
#pragma omp parallel for schedule(static) if (rows * channels >= parallel_threshold)
  for (std::int64_t row = 0; row < rows; ++row) {
    const Element* input_row = input + row * channels;
    Element* output_row = output + row * channels;
#pragma omp simd
    for (int channel = 0; channel < channels; ++channel) {
      const float value = (widen(input_row[channel]) - center[channel]) * scale[channel] + offset[channel];
      narrow_into(output_row[channel], value < 0.0f ? 0.0f : value);
    }
  }
}

template <typename Element>
void affine_per_channel(const BatchNormGeometry& geometry, std::int64_t rows, const Element* input,
                        const float* center, const float* scale, const float* offset, Element* output) {
  if (geometry.activation == FusedActivation::Relu)
    affine_relu_per_channel(rows, geometry.channels, input, center, scale, offset, output);
  else
    affine_per_channel(rows, geometry.channels, input, center, scale, offset, output);
}

}  // namespace

template <typename Element>
void BatchNorms::forward_training_of(const BatchNormGeometry& geometry, const Element* input,
                                     const float* gamma, const float* beta, Element* output,
                                     float* running_mean, float* running_variance, float momentum,
                                     float* saved_mean, float* saved_inverse_std) {
  const std::int64_t rows = static_cast<std::int64_t>(geometry.batch) * geometry.spatial;
  const int channels = geometry.channels;
  PHALANX_CHECK(rows > 1, "batch norm in training needs more than one value per channel, got ", rows);
  const std::int64_t blocks = block_count(rows);
  block_sums_.resize(static_cast<std::size_t>(blocks) * 2 * channels);
  channel_center_.resize(channels);
  channel_scale_.resize(channels);
  channel_offset_.resize(channels);

  // Per block, in coordinates shifted by the block's first row (so float sums of inputs with a
  // large common mean lose nothing): the sum of shifted values, then the squared deviations
  // from the block's mean, read again while the block is still in cache. Blocks merge exactly
  // in double below, so the variance has no E[x^2] - E[x]^2 cancellation.
  float* __restrict sums = block_sums_.data();
#pragma omp parallel for schedule(static) if (rows * channels >= parallel_threshold)
  for (std::int64_t block = 0; block < blocks; ++block) {
    float* __restrict sum = sums + block * 2 * channels;
    float* __restrict squared_deviations = sum + channels;
    std::fill(sum, sum + 2 * channels, 0.0f);
    const std::int64_t begin = block * block_rows, end = std::min(rows, begin + block_rows);
    const Element* __restrict shift = input + begin * channels;
    for (std::int64_t row = begin; row < end; ++row) {
      const Element* __restrict input_row = input + row * channels;
#pragma omp simd
      for (int channel = 0; channel < channels; ++channel)
        sum[channel] += widen(input_row[channel]) - widen(shift[channel]);
    }
    const float inverse_block_size = 1.0f / static_cast<float>(end - begin);
    for (std::int64_t row = begin; row < end; ++row) {
      const Element* __restrict input_row = input + row * channels;
#pragma omp simd
      for (int channel = 0; channel < channels; ++channel) {
        const float deviation =
            (widen(input_row[channel]) - widen(shift[channel])) - sum[channel] * inverse_block_size;
        squared_deviations[channel] += deviation * deviation;
      }
    }
  }

  const double count = static_cast<double>(rows);
  for (int channel = 0; channel < channels; ++channel) {
    double total = 0;
    for (std::int64_t block = 0; block < blocks; ++block) {
      const std::int64_t begin = block * block_rows;
      const double block_size = static_cast<double>(std::min(rows, begin + block_rows) - begin);
      total += block_size * widen(input[begin * channels + channel]) + sums[block * 2 * channels + channel];
    }
    const double mean = total / count;
    // Sum over a block of (x - mean)^2 from its deviations about its centre c (the float block
    // mean the loop used): q + 2 (c - mean) sum(x - c) + n (c - mean)^2, exact for any c.
    double squared_deviations = 0;
    for (std::int64_t block = 0; block < blocks; ++block) {
      const std::int64_t begin = block * block_rows;
      const float block_size = static_cast<float>(std::min(rows, begin + block_rows) - begin);
      const float shifted_sum = sums[block * 2 * channels + channel];
      const double shifted_center = shifted_sum * (1.0f / block_size);
      const double center_offset = widen(input[begin * channels + channel]) + shifted_center - mean;
      const double sum_about_center = shifted_sum - block_size * shifted_center;
      squared_deviations += sums[block * 2 * channels + channels + channel] +
                            2.0 * center_offset * sum_about_center +
                            block_size * center_offset * center_offset;
    }
    const double variance = squared_deviations / count;
    const double inverse_std = 1.0 / std::sqrt(variance + geometry.epsilon);
    saved_mean[channel] = static_cast<float>(mean);
    saved_inverse_std[channel] = static_cast<float>(inverse_std);
    // PyTorch: running = (1 - momentum) * running + momentum * batch value, with the unbiased
    // variance for the running estimate (the biased one normalises).
    running_mean[channel] = static_cast<float>((1.0 - momentum) * running_mean[channel] + momentum * mean);
    running_variance[channel] = static_cast<float>((1.0 - momentum) * running_variance[channel] +
                                                   momentum * squared_deviations / (count - 1.0));
    // Normalise as (x - float mean) * scale + (beta - (mean - float mean) * scale): the second
    // term restores the bits the float mean rounded away, which matter when the mean is large
    // against the spread.
    const double scale = gamma[channel] * inverse_std;
    channel_center_[channel] = static_cast<float>(mean);
    channel_scale_[channel] = static_cast<float>(scale);
    channel_offset_[channel] = static_cast<float>(beta[channel] - (mean - channel_center_[channel]) * scale);
  }
  affine_per_channel(geometry, rows, input, channel_center_.data(), channel_scale_.data(),
                     channel_offset_.data(), output);
}

template <typename Element>
void BatchNorms::forward_inference_of(const BatchNormGeometry& geometry, const Element* input,
                                      const float* gamma, const float* beta, const float* running_mean,
                                      const float* running_variance, Element* output) {
  const std::int64_t rows = static_cast<std::int64_t>(geometry.batch) * geometry.spatial;
  const int channels = geometry.channels;
  channel_scale_.resize(channels);
  for (int channel = 0; channel < channels; ++channel)
    channel_scale_[channel] = static_cast<float>(
        gamma[channel] / std::sqrt(static_cast<double>(running_variance[channel]) + geometry.epsilon));
  affine_per_channel(geometry, rows, input, running_mean, channel_scale_.data(), beta, output);
}

template <typename Element>
void BatchNorms::backward_of(const BatchNormGeometry& geometry, const Element* input,
                             const Element* grad_output, const float* gamma, const float* saved_mean,
                             const float* saved_inverse_std, Element* grad_input, float* grad_gamma,
                             float* grad_beta) {
  const std::int64_t rows = static_cast<std::int64_t>(geometry.batch) * geometry.spatial;
  const int channels = geometry.channels;
  const std::int64_t blocks = block_count(rows);
  block_sums_.resize(static_cast<std::size_t>(blocks) * 2 * channels);
  channel_scale_.resize(channels);
  channel_offset_.resize(channels);
  channel_centered_scale_.resize(channels);

  // Per block: sum of grad_output and of grad_output * (x - mean).
  float* __restrict sums = block_sums_.data();
#pragma omp parallel for schedule(static) if (rows * channels >= parallel_threshold)
  for (std::int64_t block = 0; block < blocks; ++block) {
    float* __restrict sum = sums + block * 2 * channels;
    float* __restrict sum_times_centered = sum + channels;
    std::fill(sum, sum + 2 * channels, 0.0f);
    const std::int64_t end = std::min(rows, (block + 1) * block_rows);
    for (std::int64_t row = block * block_rows; row < end; ++row) {
      const Element* __restrict input_row = input + row * channels;
      const Element* __restrict grad_row = grad_output + row * channels;
#pragma omp simd
      for (int channel = 0; channel < channels; ++channel) {
        const float grad = widen(grad_row[channel]);
        sum[channel] += grad;
        sum_times_centered[channel] += grad * (widen(input_row[channel]) - saved_mean[channel]);
      }
    }
  }

  // grad_input = gamma * inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat)), rewritten as
  // grad_scale * dy + centered_scale * (x - mean) + offset with per-channel coefficients.
  const double count = static_cast<double>(rows);
  for (int channel = 0; channel < channels; ++channel) {
    double sum = 0, sum_times_centered = 0;
    for (std::int64_t block = 0; block < blocks; ++block) {
      sum += sums[block * 2 * channels + channel];
      sum_times_centered += sums[block * 2 * channels + channels + channel];
    }
    const double inverse_std = saved_inverse_std[channel];
    grad_beta[channel] = static_cast<float>(sum);
    grad_gamma[channel] = static_cast<float>(sum_times_centered * inverse_std);
    const double grad_scale = gamma[channel] * inverse_std;
    channel_scale_[channel] = static_cast<float>(grad_scale);
    channel_centered_scale_[channel] =
        static_cast<float>(-grad_scale * inverse_std * inverse_std * sum_times_centered / count);
    channel_offset_[channel] = static_cast<float>(-grad_scale * sum / count);
  }
  const float* __restrict grad_scale = channel_scale_.data();
  const float* __restrict centered_scale = channel_centered_scale_.data();
  const float* __restrict offset = channel_offset_.data();
  // No __restrict on the rows: grad_input may overwrite grad_output (in place).
#pragma omp parallel for schedule(static) if (rows * channels >= parallel_threshold)
  for (std::int64_t row = 0; row < rows; ++row) {
    const Element* input_row = input + row * channels;
    const Element* grad_row = grad_output + row * channels;
    Element* result_row = grad_input + row * channels;
#pragma omp simd
    for (int channel = 0; channel < channels; ++channel)
      narrow_into(result_row[channel],
                  grad_scale[channel] * widen(grad_row[channel]) +
                      centered_scale[channel] * (widen(input_row[channel]) - saved_mean[channel]) +
                      offset[channel]);
  }
}

void BatchNorms::set_storage(ComputePrecision precision) {
  PHALANX_CHECK(precision == ComputePrecision::Float32 || precision == ComputePrecision::BFloat16,
                "the CPU batch norm holds activations in fp32 or bf16");
  storage_ = precision;
}

void BatchNorms::forward_training(const BatchNormGeometry& geometry, const float* input, const float* gamma,
                                  const float* beta, float* output, float* running_mean,
                                  float* running_variance, float momentum, float* saved_mean,
                                  float* saved_inverse_std) {
  if (storage_ == ComputePrecision::BFloat16)
    forward_training_of(geometry, as_bf16(input), gamma, beta, as_bf16(output), running_mean,
                        running_variance, momentum, saved_mean, saved_inverse_std);
  else
    forward_training_of(geometry, input, gamma, beta, output, running_mean, running_variance, momentum,
                        saved_mean, saved_inverse_std);
}

void BatchNorms::forward_inference(const BatchNormGeometry& geometry, const float* input, const float* gamma,
                                   const float* beta, const float* running_mean,
                                   const float* running_variance, float* output) {
  if (storage_ == ComputePrecision::BFloat16)
    forward_inference_of(geometry, as_bf16(input), gamma, beta, running_mean, running_variance,
                         as_bf16(output));
  else
    forward_inference_of(geometry, input, gamma, beta, running_mean, running_variance, output);
}

void BatchNorms::backward(const BatchNormGeometry& geometry, const float* input, const float* grad_output,
                          const float* gamma, const float* saved_mean, const float* saved_inverse_std,
                          float* grad_input, float* grad_gamma, float* grad_beta) {
  if (storage_ == ComputePrecision::BFloat16)
    backward_of(geometry, as_bf16(input), as_bf16(grad_output), gamma, saved_mean, saved_inverse_std,
                as_bf16(grad_input), grad_gamma, grad_beta);
  else
    backward_of(geometry, input, grad_output, gamma, saved_mean, saved_inverse_std, grad_input, grad_gamma,
                grad_beta);
}

}  // namespace phalanx::backend::cpu
