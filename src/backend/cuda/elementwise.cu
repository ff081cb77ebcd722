// Element-wise kernels of the CUDA backend (see elementwise.hpp): grid-stride loops over
// contiguous floats. The arithmetic is written as the CPU backend's loops write it (no fast-math,
// IEEE division), so normalisation, ReLU, sums and scaling give the same bits on both.
#include "cuda_check.hpp"
#include "elementwise.hpp"
#include "launch.hpp"

namespace phalanx::backend::cuda {

namespace {

__device__ inline std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ inline std::int64_t index_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

__global__ void fill_kernel(float* data, std::int64_t count, float value) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) data[i] = value;
}

// (x / 255 - mean) / std evaluated as written, as the CPU backend does, so both round alike.
__global__ void normalize_images_kernel(const std::uint8_t* images, std::int64_t count, int channels,
                                        const float* mean, const float* standard_deviation, float* output) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) {
    const int channel = channels == 1 ? 0 : static_cast<int>(i % channels);
    output[i] = (static_cast<float>(images[i]) / 255.0f - mean[channel]) / standard_deviation[channel];
  }
}

// `x < 0 ? 0 : x` keeps NaN as NaN, as torch.relu and the CPU backend do.
__global__ void relu_forward_kernel(std::int64_t count, const float* input, float* output) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) {
    const float value = input[i];
    output[i] = value < 0.0f ? 0.0f : value;
  }
}

__global__ void relu_backward_kernel(std::int64_t count, const float* output, const float* grad_output,
                                     float* grad_input) {
  for (std::int64_t i = first_index(); i < count; i += index_stride())
    grad_input[i] = output[i] > 0.0f ? grad_output[i] : 0.0f;
}

__global__ void add_kernel(std::int64_t count, const float* a, const float* b, float* output) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) output[i] = a[i] + b[i];
}

// The sum rounded to float first, then `x < 0 ? 0 : x`: add_kernel and relu_forward_kernel in one.
__global__ void add_relu_kernel(std::int64_t count, const float* a, const float* b, float* output) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) {
    const float sum = a[i] + b[i];
    output[i] = sum < 0.0f ? 0.0f : sum;
  }
}

__global__ void accumulate_kernel(std::int64_t count, const float* source, float* destination) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) destination[i] += source[i];
}

__global__ void scale_kernel(std::int64_t count, float factor, float* data) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) data[i] *= factor;
}

__global__ void add_bias_rows_kernel(std::int64_t count, int columns, const float* bias, float* data) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) data[i] += bias[i % columns];
}

}  // namespace

void launch_fill(cudaStream_t stream, float* data, std::int64_t count, float value) {
  if (count <= 0) return;
  fill_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(data, count, value);
  PHALANX_CUDA_LAUNCHED("fill_kernel");
}

void launch_normalize_images(cudaStream_t stream, const std::uint8_t* images, std::int64_t pixels,
                             int channels, const float* mean, const float* standard_deviation,
                             float* output) {
  const std::int64_t count = pixels * channels;
  if (count <= 0) return;
  normalize_images_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(images, count, channels, mean,
                                                                                standard_deviation, output);
  PHALANX_CUDA_LAUNCHED("normalize_images_kernel");
}

void launch_relu_forward(cudaStream_t stream, std::int64_t count, const float* input, float* output) {
  if (count <= 0) return;
  relu_forward_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, input, output);
  PHALANX_CUDA_LAUNCHED("relu_forward_kernel");
}

void launch_relu_backward(cudaStream_t stream, std::int64_t count, const float* output,
                          const float* grad_output, float* grad_input) {
  if (count <= 0) return;
  relu_backward_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, output, grad_output,
                                                                             grad_input);
  PHALANX_CUDA_LAUNCHED("relu_backward_kernel");
}

void launch_add(cudaStream_t stream, std::int64_t count, const float* a, const float* b, float* output) {
  if (count <= 0) return;
  add_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, a, b, output);
  PHALANX_CUDA_LAUNCHED("add_kernel");
}

void launch_add_relu(cudaStream_t stream, std::int64_t count, const float* a, const float* b, float* output) {
  if (count <= 0) return;
  add_relu_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, a, b, output);
  PHALANX_CUDA_LAUNCHED("add_relu_kernel");
}

void launch_accumulate(cudaStream_t stream, std::int64_t count, const float* source, float* destination) {
  if (count <= 0) return;
  accumulate_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, source, destination);
  PHALANX_CUDA_LAUNCHED("accumulate_kernel");
}

void launch_scale(cudaStream_t stream, std::int64_t count, float factor, float* data) {
  if (count <= 0) return;
  scale_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, factor, data);
  PHALANX_CUDA_LAUNCHED("scale_kernel");
}

void launch_add_bias_rows(cudaStream_t stream, std::int64_t rows, int columns, const float* bias,
                          float* data) {
  const std::int64_t count = rows * columns;
  if (count <= 0) return;
  add_bias_rows_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, columns, bias, data);
  PHALANX_CUDA_LAUNCHED("add_bias_rows_kernel");
}

}  // namespace phalanx::backend::cuda
