// Scaling of NHWC activations per (sample, channel) and per sample on the device. The products are
// those of the CPU backend bit for bit; the channel sums of the backward run in a fixed tree order
// of their own (deterministic, within float rounding of the CPU's sequential sums).
#include "channel_scale.hpp"
#include "cuda_check.hpp"
#include "launch.hpp"
#include "stored_value.hpp"

namespace phalanx::backend::cuda {

namespace {

template <typename Stored>
__global__ void channel_scale_kernel(std::int64_t total, std::int64_t spatial, std::int64_t channels,
                                     const Stored* input, const Stored* scale, Stored* output) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t channel = i % channels;
    const std::int64_t sample = i / (channels * spatial);
    output[i] = narrow<Stored>(widen(input[i]) * widen(scale[sample * channels + channel]));
  }
}

// A block covers 32 channels of one sample: threadIdx.x picks the channel (neighbouring threads
// read neighbouring addresses), threadIdx.y strides over the positions; the 8 partial sums of each
// channel are then added in a fixed order.
constexpr int channels_per_block = 32;
constexpr int rows_per_block = 8;

template <typename Stored>
__global__ void channel_scale_gradient_kernel(std::int64_t spatial, std::int64_t channels,
                                              const Stored* input, const Stored* grad_output,
                                              Stored* grad_scale) {
  __shared__ float partial[rows_per_block][channels_per_block];
  const std::int64_t sample = blockIdx.y;
  const std::int64_t channel = static_cast<std::int64_t>(blockIdx.x) * channels_per_block + threadIdx.x;
  float sum = 0.0f;
  if (channel < channels) {
    for (std::int64_t position = threadIdx.y; position < spatial; position += rows_per_block) {
      const std::int64_t index = (sample * spatial + position) * channels + channel;
      sum += widen(grad_output[index]) * widen(input[index]);
    }
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && channel < channels) {
    float total = 0.0f;
    for (int row = 0; row < rows_per_block; ++row) total += partial[row][threadIdx.x];
    grad_scale[sample * channels + channel] = narrow<Stored>(total);
  }
}

template <typename Stored>
__global__ void scale_samples_kernel(std::int64_t total, std::int64_t sample_elements,
                                     const std::uint8_t* keep, float keep_scale, const Stored* input,
                                     Stored* output) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    output[i] = narrow<Stored>(keep[i / sample_elements] ? widen(input[i]) * keep_scale : 0.0f);
}

}  // namespace

void launch_channel_scale_forward(cudaStream_t stream, ComputePrecision storage, std::int64_t batch,
                                  std::int64_t spatial, std::int64_t channels, const float* input,
                                  const float* scale, float* output) {
  const std::int64_t total = batch * spatial * channels;
  if (total <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    channel_scale_kernel<<<grid_blocks(total), threads_per_block, 0, stream>>>(
        total, spatial, channels, stored<Stored>(input), stored<Stored>(scale), stored<Stored>(output));
  });
  PHALANX_CUDA_LAUNCHED("channel_scale_kernel");
}

void launch_channel_scale_backward(cudaStream_t stream, ComputePrecision storage, std::int64_t batch,
                                   std::int64_t spatial, std::int64_t channels, const float* input,
                                   const float* scale, const float* grad_output, float* grad_input,
                                   float* grad_scale) {
  if (batch * spatial * channels <= 0) return;
  const dim3 blocks(static_cast<unsigned int>((channels + channels_per_block - 1) / channels_per_block),
                    static_cast<unsigned int>(batch));
  const dim3 threads(channels_per_block, rows_per_block);
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    channel_scale_gradient_kernel<<<blocks, threads, 0, stream>>>(
        spatial, channels, stored<Stored>(input), stored<Stored>(grad_output), stored<Stored>(grad_scale));
  });
  PHALANX_CUDA_LAUNCHED("channel_scale_gradient_kernel");
  if (grad_input)
    launch_channel_scale_forward(stream, storage, batch, spatial, channels, grad_output, scale, grad_input);
}

void launch_scale_samples(cudaStream_t stream, ComputePrecision storage, std::int64_t batch,
                          std::int64_t sample_elements, const std::uint8_t* keep, float keep_scale,
                          const float* input, float* output) {
  const std::int64_t total = batch * sample_elements;
  if (total <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    scale_samples_kernel<<<grid_blocks(total), threads_per_block, 0, stream>>>(
        total, sample_elements, keep, keep_scale, stored<Stored>(input), stored<Stored>(output));
  });
  PHALANX_CUDA_LAUNCHED("scale_samples_kernel");
}

}  // namespace phalanx::backend::cuda
