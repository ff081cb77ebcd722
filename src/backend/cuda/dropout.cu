// Inverted dropout on the device with the CPU backend's mask: element i is kept when the top 24
// bits of word i % 4 of philox4x32(seed, stream, i / 4) reach ceil(p * 2^24), with the host's own
// generator (phalanx/core/philox.hpp). The masks are bitwise those of the CPU, and so are the
// outputs (one float multiply each, nothing to fuse; bf16/fp16 activations are widened first and
// the product rounded once).
#include "cuda_check.hpp"
#include "dropout_threshold.hpp"
#include "elementwise.hpp"
#include "launch.hpp"
#include "phalanx/core/philox.hpp"
#include "stored_value.hpp"

namespace phalanx::backend::cuda {

namespace {

// Philox's multiply-high as the one instruction it is on the device (phalanx/core/philox.hpp says why).
struct DeviceMultiplyHigh {
  __device__ std::uint32_t operator()(std::uint32_t a, std::uint32_t b) const { return __umulhi(a, b); }
};

// One thread per Philox block of four elements.
template <typename Stored>
__global__ void dropout_forward_kernel(std::int64_t count, std::uint32_t threshold, float keep_scale,
                                       std::uint64_t seed, std::uint64_t random_stream, const Stored* input,
                                       Stored* output, std::uint8_t* mask) {
  const std::int64_t groups = (count + 3) / 4;
  for (std::int64_t group = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; group < groups;
       group += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::array<std::uint32_t, 4> draws =
        philox4x32(seed, random_stream, static_cast<std::uint64_t>(group), DeviceMultiplyHigh{});
    const std::int64_t first = group * 4;
    const int lanes = count - first < 4 ? static_cast<int>(count - first) : 4;
    for (int lane = 0; lane < lanes; ++lane) {
      const bool keep = (draws[lane] >> 8) >= threshold;
      mask[first + lane] = keep ? 1 : 0;
      output[first + lane] = narrow<Stored>(keep ? widen(input[first + lane]) * keep_scale : 0.0f);
    }
  }
}

template <typename Stored>
__global__ void dropout_backward_kernel(std::int64_t count, float keep_scale, const std::uint8_t* mask,
                                        const Stored* grad_output, Stored* grad_input) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    grad_input[i] = narrow<Stored>(mask[i] ? widen(grad_output[i]) * keep_scale : 0.0f);
}

}  // namespace

void launch_dropout_forward(cudaStream_t stream, ComputePrecision storage, std::int64_t count,
                            float probability, std::uint64_t seed, std::uint64_t random_stream,
                            const float* input, float* output, std::uint8_t* mask) {
  if (count <= 0) return;
  // p >= 1 drops everything (PyTorch returns zeros): a threshold above every 24-bit draw, and a
  // scale that is never used, so no 0 * inf appears.
  const bool drop_all = probability >= 1.0f;
  const std::uint32_t threshold = dropout_keep_threshold(probability);
  const float keep_scale = drop_all ? 0.0f : 1.0f / (1.0f - probability);
  const std::int64_t groups = (count + 3) / 4;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    dropout_forward_kernel<<<grid_blocks(groups), threads_per_block, 0, stream>>>(
        count, threshold, keep_scale, seed, random_stream, stored<Stored>(input), stored<Stored>(output),
        mask);
  });
  PHALANX_CUDA_LAUNCHED("dropout_forward_kernel");
}

void launch_dropout_backward(cudaStream_t stream, ComputePrecision storage, std::int64_t count,
                             float probability, const std::uint8_t* mask, const float* grad_output,
                             float* grad_input) {
  if (count <= 0) return;
  const float keep_scale = probability >= 1.0f ? 0.0f : 1.0f / (1.0f - probability);
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    dropout_backward_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
        count, keep_scale, mask, stored<Stored>(grad_output), stored<Stored>(grad_input));
  });
  PHALANX_CUDA_LAUNCHED("dropout_backward_kernel");
}

}  // namespace phalanx::backend::cuda
