// Inverted dropout with a counter-based mask: element i is kept when u_i >= p, where u_i is the
// i-th RandomStream(seed, stream).next_uniform() (Philox-4x32 block i/4, word i%4, top 24 bits).
// The mask is thus a pure function of (seed, stream, i): independent of thread count,
// reproducible on resume, and drawable by the CUDA backend too. fp32 and bf16 activations (the
// kept values scaled in float and rounded once).
#include <algorithm>
#include <array>
#include <cmath>

#include "elementwise.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::backend::cpu {

namespace {

template <typename Element>
void dropout_forward_of(std::int64_t count, float probability, std::uint64_t seed, std::uint64_t stream,
                        const Element* input, Element* output, std::uint8_t* mask) {
  if (probability >= 1.0f) {
    // Everything dropped: PyTorch returns zeros rather than 0 * inf. The mask is filled apart: a
    // byte store may alias anything, the loop's own pointers included, and clang then cannot
    // vectorize the loop that `simd` asks it to.
    std::fill_n(mask, count, std::uint8_t{0});
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
    for (std::int64_t i = 0; i < count; ++i) narrow_into(output[i], 0.0f);
    return;
  }
  // Keep when uniform >= p, uniform = (draw >> 8) / 2^24 as RandomStream::next_uniform makes
  // it; in integers: (draw >> 8) >= ceil(p * 2^24).
  const std::uint32_t threshold =
      static_cast<std::uint32_t>(std::ceil(static_cast<double>(probability) * 16777216.0));
  const float keep_scale = 1.0f / (1.0f - probability);
  const std::int64_t groups = (count + 3) / 4;
#pragma omp parallel for schedule(static) if (count >= parallel_threshold / 8)
  for (std::int64_t group = 0; group < groups; ++group) {
    const std::array<std::uint32_t, 4> draws = philox4x32(seed, stream, static_cast<std::uint64_t>(group));
    const std::int64_t first = group * 4;
    const int lanes = static_cast<int>(std::min<std::int64_t>(4, count - first));
    for (int lane = 0; lane < lanes; ++lane) {
      const bool keep = (draws[lane] >> 8) >= threshold;
      mask[first + lane] = keep ? 1 : 0;
      narrow_into(output[first + lane], keep ? widen(input[first + lane]) * keep_scale : 0.0f);
    }
  }
}

template <typename Element>
void dropout_backward_of(std::int64_t count, float probability, const std::uint8_t* mask,
                         const Element* grad_output, Element* grad_input) {
  const float keep_scale = probability >= 1.0f ? 0.0f : 1.0f / (1.0f - probability);
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i)
    narrow_into(grad_input[i], mask[i] ? widen(grad_output[i]) * keep_scale : 0.0f);
}

}  // namespace

void dropout_forward(std::int64_t count, float probability, std::uint64_t seed, std::uint64_t stream,
                     const float* input, float* output, std::uint8_t* mask) {
  dropout_forward_of(count, probability, seed, stream, input, output, mask);
}
void dropout_forward(std::int64_t count, float probability, std::uint64_t seed, std::uint64_t stream,
                     const Bf16* input, Bf16* output, std::uint8_t* mask) {
  dropout_forward_of(count, probability, seed, stream, input, output, mask);
}

void dropout_backward(std::int64_t count, float probability, const std::uint8_t* mask,
                      const float* grad_output, float* grad_input) {
  dropout_backward_of(count, probability, mask, grad_output, grad_input);
}
void dropout_backward(std::int64_t count, float probability, const std::uint8_t* mask,
                      const Bf16* grad_output, Bf16* grad_input) {
  dropout_backward_of(count, probability, mask, grad_output, grad_input);
}

}  // namespace phalanx::backend::cpu
