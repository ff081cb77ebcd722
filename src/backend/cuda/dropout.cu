// Inverted dropout on the device with the CPU backend's mask: element i is kept when the top 24
// bits of word i % 4 of philox4x32(seed, stream, i / 4) reach ceil(p * 2^24). Philox-4x32-10 is
// restated here as device code (phalanx::philox4x32 in core/random.cpp is host code); integer
// arithmetic only, so the masks are bitwise those of the CPU, and so are the outputs (one
// float multiply each).
#include <cmath>

#include "cuda_check.hpp"
#include "elementwise.hpp"
#include "launch.hpp"

namespace phalanx::backend::cuda {

namespace {

struct PhiloxBlock {
  std::uint32_t word[4];
};

// Philox-4x32-10 with key (seed), counter (counter_low, counter_high) as core/random.cpp has it.
__device__ inline PhiloxBlock philox4x32(std::uint64_t key, std::uint64_t counter_high,
                                         std::uint64_t counter_low) {
  constexpr std::uint32_t multiplier0 = 0xD2511F53u, multiplier1 = 0xCD9E8D57u;
  constexpr std::uint32_t weyl0 = 0x9E3779B9u, weyl1 = 0xBB67AE85u;
  std::uint32_t key0 = static_cast<std::uint32_t>(key), key1 = static_cast<std::uint32_t>(key >> 32);
  std::uint32_t c0 = static_cast<std::uint32_t>(counter_low),
                c1 = static_cast<std::uint32_t>(counter_low >> 32);
  std::uint32_t c2 = static_cast<std::uint32_t>(counter_high),
                c3 = static_cast<std::uint32_t>(counter_high >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const std::uint32_t high0 = __umulhi(multiplier0, c0), low0 = multiplier0 * c0;
    const std::uint32_t high1 = __umulhi(multiplier1, c2), low1 = multiplier1 * c2;
    const std::uint32_t next0 = high1 ^ c1 ^ key0;
    const std::uint32_t next2 = high0 ^ c3 ^ key1;
    c1 = low1;
    c3 = low0;
    c0 = next0;
    c2 = next2;
    key0 += weyl0;
    key1 += weyl1;
  }
  return {{c0, c1, c2, c3}};
}

// One thread per Philox block of four elements.
__global__ void dropout_forward_kernel(std::int64_t count, std::uint32_t threshold, float keep_scale,
                                       std::uint64_t seed, std::uint64_t random_stream, const float* input,
                                       float* output, std::uint8_t* mask) {
  const std::int64_t groups = (count + 3) / 4;
  for (std::int64_t group = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; group < groups;
       group += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const PhiloxBlock draws = philox4x32(seed, random_stream, static_cast<std::uint64_t>(group));
    const std::int64_t first = group * 4;
    const int lanes = count - first < 4 ? static_cast<int>(count - first) : 4;
    for (int lane = 0; lane < lanes; ++lane) {
      const bool keep = (draws.word[lane] >> 8) >= threshold;
      mask[first + lane] = keep ? 1 : 0;
      output[first + lane] = keep ? input[first + lane] * keep_scale : 0.0f;
    }
  }
}

__global__ void dropout_backward_kernel(std::int64_t count, float keep_scale, const std::uint8_t* mask,
                                        const float* grad_output, float* grad_input) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    grad_input[i] = mask[i] ? grad_output[i] * keep_scale : 0.0f;
}

}  // namespace

void launch_dropout_forward(cudaStream_t stream, std::int64_t count, float probability, std::uint64_t seed,
                            std::uint64_t random_stream, const float* input, float* output,
                            std::uint8_t* mask) {
  if (count <= 0) return;
  // p >= 1 drops everything (PyTorch returns zeros): a threshold above every 24-bit draw, and a
  // scale that is never used, so no 0 * inf appears.
  const bool drop_all = probability >= 1.0f;
  const std::uint32_t threshold =
      drop_all ? (1u << 24)
               : static_cast<std::uint32_t>(std::ceil(static_cast<double>(probability) * 16777216.0));
  const float keep_scale = drop_all ? 0.0f : 1.0f / (1.0f - probability);
  const std::int64_t groups = (count + 3) / 4;
  dropout_forward_kernel<<<grid_blocks(groups), threads_per_block, 0, stream>>>(
      count, threshold, keep_scale, seed, random_stream, input, output, mask);
  PHALANX_CUDA_LAUNCHED("dropout_forward_kernel");
}

void launch_dropout_backward(cudaStream_t stream, std::int64_t count, float probability,
                             const std::uint8_t* mask, const float* grad_output, float* grad_input) {
  if (count <= 0) return;
  const float keep_scale = probability >= 1.0f ? 0.0f : 1.0f / (1.0f - probability);
  dropout_backward_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, keep_scale, mask,
                                                                                grad_output, grad_input);
  PHALANX_CUDA_LAUNCHED("dropout_backward_kernel");
}

}  // namespace phalanx::backend::cuda
