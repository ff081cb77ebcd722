// Element-wise kernels of the CUDA backend (see elementwise.hpp): grid-stride loops over
// contiguous elements. The arithmetic is written as the CPU backend's loops write it (no fast-math,
// IEEE division), so normalisation, ReLU, sums and scaling give the same bits on both; activations
// held in bf16/fp16 are widened, computed on in float, and rounded once (stored_value.hpp).
#include "cuda_check.hpp"
#include "elementwise.hpp"
#include "launch.hpp"
#include "stored_value.hpp"

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
template <typename Stored>
__global__ void normalize_images_kernel(const std::uint8_t* images, std::int64_t count, int channels,
                                        const float* mean, const float* standard_deviation, Stored* output) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) {
    const int channel = channels == 1 ? 0 : static_cast<int>(i % channels);
    output[i] = narrow<Stored>((static_cast<float>(images[i]) / 255.0f - mean[channel]) /
                               standard_deviation[channel]);
  }
}

// `x < 0 ? 0 : x` keeps NaN as NaN, as torch.relu and the CPU backend do.
template <typename Stored>
__global__ void relu_forward_kernel(std::int64_t count, const Stored* input, Stored* output) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) {
    const float value = widen(input[i]);
    output[i] = narrow<Stored>(value < 0.0f ? 0.0f : value);
  }
}

template <typename Stored>
__global__ void relu_backward_kernel(std::int64_t count, const Stored* output, const Stored* grad_output,
                                     Stored* grad_input) {
  for (std::int64_t i = first_index(); i < count; i += index_stride())
    grad_input[i] = widen(output[i]) > 0.0f ? grad_output[i] : narrow<Stored>(0.0f);
}

template <typename Stored>
__global__ void add_kernel(std::int64_t count, const Stored* a, const Stored* b, Stored* output) {
  for (std::int64_t i = first_index(); i < count; i += index_stride())
    output[i] = narrow<Stored>(widen(a[i]) + widen(b[i]));
}

// The sum in float, then `x < 0 ? 0 : x`, then one rounding: add_kernel and relu_forward_kernel in
// one (ReLU commutes with the rounding, so the bits are those of the two kernels).
template <typename Stored>
__global__ void add_relu_kernel(std::int64_t count, const Stored* a, const Stored* b, Stored* output) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) {
    const float sum = widen(a[i]) + widen(b[i]);
    output[i] = narrow<Stored>(sum < 0.0f ? 0.0f : sum);
  }
}

template <typename Stored>
__global__ void accumulate_kernel(std::int64_t count, const Stored* source, Stored* destination) {
  for (std::int64_t i = first_index(); i < count; i += index_stride())
    destination[i] = narrow<Stored>(widen(destination[i]) + widen(source[i]));
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

void launch_normalize_images(cudaStream_t stream, ComputePrecision storage, const std::uint8_t* images,
                             std::int64_t pixels, int channels, const float* mean,
                             const float* standard_deviation, float* output) {
  const std::int64_t count = pixels * channels;
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    normalize_images_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
        images, count, channels, mean, standard_deviation, stored<Stored>(output));
  });
  PHALANX_CUDA_LAUNCHED("normalize_images_kernel");
}

void launch_relu_forward(cudaStream_t stream, ComputePrecision storage, std::int64_t count,
                         const float* input, float* output) {
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    relu_forward_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, stored<Stored>(input),
                                                                              stored<Stored>(output));
  });
  PHALANX_CUDA_LAUNCHED("relu_forward_kernel");
}

void launch_relu_backward(cudaStream_t stream, ComputePrecision storage, std::int64_t count,
                          const float* output, const float* grad_output, float* grad_input) {
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    relu_backward_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
        count, stored<Stored>(output), stored<Stored>(grad_output), stored<Stored>(grad_input));
  });
  PHALANX_CUDA_LAUNCHED("relu_backward_kernel");
}

void launch_add(cudaStream_t stream, ComputePrecision storage, std::int64_t count, const float* a,
                const float* b, float* output) {
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    add_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
        count, stored<Stored>(a), stored<Stored>(b), stored<Stored>(output));
  });
  PHALANX_CUDA_LAUNCHED("add_kernel");
}

void launch_add_relu(cudaStream_t stream, ComputePrecision storage, std::int64_t count, const float* a,
                     const float* b, float* output) {
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    add_relu_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
        count, stored<Stored>(a), stored<Stored>(b), stored<Stored>(output));
  });
  PHALANX_CUDA_LAUNCHED("add_relu_kernel");
}

void launch_accumulate(cudaStream_t stream, ComputePrecision storage, std::int64_t count, const float* source,
                       float* destination) {
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    accumulate_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, stored<Stored>(source),
                                                                            stored<Stored>(destination));
  });
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
