// Element-wise OpenMP loops of the CPU backend (see elementwise.hpp). Each loop is a
// `parallel for simd` over contiguous elements, which GCC vectorises with AVX2 at -O3. The loops
// over activations are templates over their element type (activation_element.hpp): float, or bf16
// widened to float, computed in float and rounded once on the way out.
#include "elementwise.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace phalanx::backend::cpu {

namespace {

template <typename Element>
void normalize_images_of(const std::uint8_t* __restrict images, std::int64_t pixels, int channels,
                         const float* mean, const float* standard_deviation, Element* __restrict output) {
  // (x / 255 - mean) / std evaluated as written (no folding into one multiply-add) so the
  // result rounds like the formula other implementations of it use.
  if (channels == 1) {
    const float channel_mean = mean[0], channel_std = standard_deviation[0];
#pragma omp parallel for simd schedule(static) if (pixels >= parallel_threshold)
    for (std::int64_t pixel = 0; pixel < pixels; ++pixel)
      narrow_into(output[pixel], (static_cast<float>(images[pixel]) / 255.0f - channel_mean) / channel_std);
    return;
  }
#pragma omp parallel for schedule(static) if (pixels * channels >= parallel_threshold)
  for (std::int64_t pixel = 0; pixel < pixels; ++pixel) {
#pragma omp simd
    for (int channel = 0; channel < channels; ++channel) {
      const std::int64_t index = pixel * channels + channel;
      narrow_into(output[index],
                  (static_cast<float>(images[index]) / 255.0f - mean[channel]) / standard_deviation[channel]);
    }
  }
}

template <typename Element>
void relu_forward_of(std::int64_t count, const Element* input, Element* output) {
  // `x < 0 ? 0 : x` keeps NaN as NaN (as torch.relu does), so a NaN check downstream still sees it.
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) {
    const float value = widen(input[i]);
    narrow_into(output[i], value < 0.0f ? 0.0f : value);
  }
}

template <typename Element>
void relu_backward_of(std::int64_t count, const Element* output, const Element* grad_output,
                      Element* grad_input) {
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) {
    // Both loaded unconditionally: a load under the condition keeps GCC from vectorising the
    // bf16 loop.
    const float gradient = widen(grad_output[i]);
    narrow_into(grad_input[i], widen(output[i]) > 0.0f ? gradient : 0.0f);
  }
}

// ReLU on bf16 as bits: its result is the input or zero, so nothing needs rounding, and 16-bit
// integer lanes do twice the elements of a widen-compute-narrow loop per instruction. The bits
// are exactly what the template computes: a value below zero (sign set, not -0, not NaN) becomes
// +0, and a NaN is kept with its quiet bit set, as narrow_into sets it.
constexpr std::uint16_t bf16_magnitude = 0x7fff, bf16_infinity = 0x7f80, bf16_sign = 0x8000, bf16_quiet = 0x40;

inline std::uint16_t bf16_kept(std::uint16_t bits) {
  return (bits & bf16_magnitude) > bf16_infinity ? static_cast<std::uint16_t>(bits | bf16_quiet) : bits;
}

void relu_forward_of(std::int64_t count, const Bf16* input_values, Bf16* output_values) {
  const std::uint16_t* __restrict input = &input_values->bits;
  std::uint16_t* __restrict output = &output_values->bits;
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint16_t bits = input[i], magnitude = bits & bf16_magnitude;
    const bool below_zero = (bits & bf16_sign) != 0 && magnitude != 0 && magnitude <= bf16_infinity;
    output[i] = below_zero ? std::uint16_t{0} : bf16_kept(bits);
  }
}

void relu_backward_of(std::int64_t count, const Bf16* output_values, const Bf16* grad_output_values,
                      Bf16* grad_input_values) {
  const std::uint16_t* __restrict output = &output_values->bits;
  const std::uint16_t* __restrict grad_output = &grad_output_values->bits;
  std::uint16_t* __restrict grad_input = &grad_input_values->bits;
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) {
    // Above zero: sign clear, not +0, not NaN (+infinity passes, as inf > 0).
    // The gradient is loaded whatever the output: a load under the condition keeps GCC from
    // vectorising the loop.
    const std::uint16_t bits = output[i], gradient = bf16_kept(grad_output[i]);
    const bool above_zero = (bits & bf16_sign) == 0 && bits != 0 && bits <= bf16_infinity;
    grad_input[i] = above_zero ? gradient : std::uint16_t{0};
  }
}

template <typename Element>
void hardsigmoid_backward_of(std::int64_t count, const Element* output, const Element* grad_output,
                             Element* grad_input) {
  // torch's hardsigmoid_backward passes grad * (1/6) where -3 < x < 3, which is where the output
  // lies strictly between 0 and 1.
  constexpr float one_sixth = 1.0f / 6.0f;
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) {
    const float value = widen(output[i]);
    const float gradient = widen(grad_output[i]) * one_sixth;
    narrow_into(grad_input[i], value > 0.0f && value < 1.0f ? gradient : 0.0f);
  }
}

template <typename Element>
void add_of(std::int64_t count, const Element* a, const Element* b, Element* output) {
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) narrow_into(output[i], widen(a[i]) + widen(b[i]));
}

template <typename Element>
void add_relu_of(std::int64_t count, const Element* a, const Element* b, Element* output) {
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) {
    const float sum = widen(a[i]) + widen(b[i]);
    narrow_into(output[i], sum < 0.0f ? 0.0f : sum);
  }
}

template <typename Element>
void accumulate_of(std::int64_t count, const Element* source, Element* destination) {
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i)
    narrow_into(destination[i], widen(destination[i]) + widen(source[i]));
}

template <typename Element>
void transpose_samples_of(std::int64_t batch, std::int64_t rows, std::int64_t columns,
                          const Element* __restrict input, Element* __restrict output) {
  // 16x16 tiles: reads and writes both touch whole cache lines instead of striding one of them.
  constexpr std::int64_t tile = 16;
#pragma omp parallel for schedule(static) if (batch * rows * columns >= parallel_threshold)
  for (std::int64_t sample = 0; sample < batch; ++sample) {
    const Element* __restrict sample_input = input + sample * rows * columns;
    Element* __restrict sample_output = output + sample * rows * columns;
    for (std::int64_t row_start = 0; row_start < rows; row_start += tile)
      for (std::int64_t column_start = 0; column_start < columns; column_start += tile) {
        const std::int64_t row_end = std::min(rows, row_start + tile);
        const std::int64_t column_end = std::min(columns, column_start + tile);
        for (std::int64_t row = row_start; row < row_end; ++row)
          for (std::int64_t column = column_start; column < column_end; ++column)
            sample_output[column * rows + row] = sample_input[row * columns + column];
      }
  }
}

// One sample's rows x columns matrix of 2-byte elements transposed in 8 x 8 tiles of SSE2
// registers (three rounds of unpacks), the edges element by element. The flatten of a small CNN
// transposes every activation it passes, forward and backward: as plain element copies this was
// a few percent of fmnist_cnn's step.
void transpose_sample_16(std::int64_t rows, std::int64_t columns, const std::uint16_t* __restrict input,
                         std::uint16_t* __restrict output) {
  const std::int64_t full_rows = rows - rows % 8, full_columns = columns - columns % 8;
  for (std::int64_t row = 0; row < full_rows; row += 8)
    for (std::int64_t column = 0; column < full_columns; column += 8) {
      __m128i line[8];
      for (int k = 0; k < 8; ++k)
        line[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(input + (row + k) * columns + column));
      // Pairs of rows interleaved by 16, 32 and then 64 bits: register k ends up holding column k.
      const __m128i a0 = _mm_unpacklo_epi16(line[0], line[1]), a1 = _mm_unpackhi_epi16(line[0], line[1]);
      const __m128i a2 = _mm_unpacklo_epi16(line[2], line[3]), a3 = _mm_unpackhi_epi16(line[2], line[3]);
      const __m128i a4 = _mm_unpacklo_epi16(line[4], line[5]), a5 = _mm_unpackhi_epi16(line[4], line[5]);
      const __m128i a6 = _mm_unpacklo_epi16(line[6], line[7]), a7 = _mm_unpackhi_epi16(line[6], line[7]);
      const __m128i b0 = _mm_unpacklo_epi32(a0, a2), b1 = _mm_unpackhi_epi32(a0, a2);
      const __m128i b2 = _mm_unpacklo_epi32(a1, a3), b3 = _mm_unpackhi_epi32(a1, a3);
      const __m128i b4 = _mm_unpacklo_epi32(a4, a6), b5 = _mm_unpackhi_epi32(a4, a6);
      const __m128i b6 = _mm_unpacklo_epi32(a5, a7), b7 = _mm_unpackhi_epi32(a5, a7);
      const __m128i columns_out[8] = {_mm_unpacklo_epi64(b0, b4), _mm_unpackhi_epi64(b0, b4),
                                      _mm_unpacklo_epi64(b1, b5), _mm_unpackhi_epi64(b1, b5),
                                      _mm_unpacklo_epi64(b2, b6), _mm_unpackhi_epi64(b2, b6),
                                      _mm_unpacklo_epi64(b3, b7), _mm_unpackhi_epi64(b3, b7)};
      for (int k = 0; k < 8; ++k)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(output + (column + k) * rows + row), columns_out[k]);
    }
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::int64_t first_column = row < full_rows ? full_columns : 0;
    for (std::int64_t column = first_column; column < columns; ++column)
      output[column * rows + row] = input[row * columns + column];
  }
}

void transpose_samples_of(std::int64_t batch, std::int64_t rows, std::int64_t columns,
                          const Bf16* __restrict input, Bf16* __restrict output) {
  const std::int64_t size = rows * columns;
#pragma omp parallel for schedule(static) if (batch * size >= parallel_threshold)
  for (std::int64_t sample = 0; sample < batch; ++sample)
    transpose_sample_16(rows, columns, &input[sample * size].bits, &output[sample * size].bits);
}

}  // namespace

void fill(float* __restrict data, std::int64_t count, float value) {
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) data[i] = value;
}

void normalize_images(const std::uint8_t* images, std::int64_t pixels, int channels, const float* mean,
                      const float* standard_deviation, float* output) {
  normalize_images_of(images, pixels, channels, mean, standard_deviation, output);
}
void normalize_images(const std::uint8_t* images, std::int64_t pixels, int channels, const float* mean,
                      const float* standard_deviation, Bf16* output) {
  normalize_images_of(images, pixels, channels, mean, standard_deviation, output);
}

void relu_forward(std::int64_t count, const float* input, float* output) {
  relu_forward_of(count, input, output);
}
void relu_forward(std::int64_t count, const Bf16* input, Bf16* output) {
  relu_forward_of(count, input, output);
}

void relu_backward(std::int64_t count, const float* output, const float* grad_output, float* grad_input) {
  relu_backward_of(count, output, grad_output, grad_input);
}
void relu_backward(std::int64_t count, const Bf16* output, const Bf16* grad_output, Bf16* grad_input) {
  relu_backward_of(count, output, grad_output, grad_input);
}

void hardsigmoid_backward(std::int64_t count, const float* output, const float* grad_output,
                          float* grad_input) {
  hardsigmoid_backward_of(count, output, grad_output, grad_input);
}
void hardsigmoid_backward(std::int64_t count, const Bf16* output, const Bf16* grad_output, Bf16* grad_input) {
  hardsigmoid_backward_of(count, output, grad_output, grad_input);
}

void add(std::int64_t count, const float* a, const float* b, float* output) {
  add_of(count, a, b, output);
}
void add(std::int64_t count, const Bf16* a, const Bf16* b, Bf16* output) {
  add_of(count, a, b, output);
}

void add_relu(std::int64_t count, const float* a, const float* b, float* output) {
  add_relu_of(count, a, b, output);
}
void add_relu(std::int64_t count, const Bf16* a, const Bf16* b, Bf16* output) {
  add_relu_of(count, a, b, output);
}

void accumulate(std::int64_t count, const float* source, float* destination) {
  accumulate_of(count, source, destination);
}
void accumulate(std::int64_t count, const Bf16* source, Bf16* destination) {
  accumulate_of(count, source, destination);
}

void scale(std::int64_t count, float factor, float* __restrict data) {
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) data[i] *= factor;
}

bool all_finite(const std::int64_t count, const float* __restrict data) {
  // x - x is 0 for finite x and NaN for inf and NaN: one branch-free pass that vectorises; an
  // OR-reduction of "is not zero" flags says whether any element was not finite.
  int non_finite = 0;
#pragma omp parallel for simd schedule(static) reduction(| : non_finite) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) non_finite |= (data[i] - data[i]) != 0.0f;
  return non_finite == 0;
}

double sum_of_squares(const std::int64_t count, const float* __restrict data) {
  // An OpenMP reduction would add the threads' sums in an order that follows the thread count;
  // fixed blocks keep the order a function of `count` alone.
  constexpr std::int64_t block = 8192;
  const std::int64_t blocks = (count + block - 1) / block;
  std::vector<double> partial(static_cast<std::size_t>(blocks));
#pragma omp parallel for schedule(static) if (count >= parallel_threshold)
  for (std::int64_t index = 0; index < blocks; ++index) {
    const std::int64_t end = std::min(count, (index + 1) * block);
    double sum = 0;
    for (std::int64_t i = index * block; i < end; ++i) sum += static_cast<double>(data[i]) * data[i];
    partial[static_cast<std::size_t>(index)] = sum;
  }
  double total = 0;
  for (const double sum : partial) total += sum;
  return total;
}

void moving_average(std::int64_t count, float decay, const float* __restrict source,
                    float* __restrict average) {
  const float complement = 1.0f - decay;
  // An explicit fused multiply-add, as the CUDA kernel's __fmaf_rn: whether a compiler would
  // contract the expression depends on its target and flags, a rounding CPU and GPU ranks must share.
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) average[i] = std::fma(decay, average[i], complement * source[i]);
}

void transpose_samples(std::int64_t batch, std::int64_t rows, std::int64_t columns, const float* input,
                       float* output) {
  transpose_samples_of(batch, rows, columns, input, output);
}
void transpose_samples(std::int64_t batch, std::int64_t rows, std::int64_t columns, const Bf16* input,
                       Bf16* output) {
  transpose_samples_of(batch, rows, columns, input, output);
}

}  // namespace phalanx::backend::cpu
