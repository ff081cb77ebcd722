// Pooling kernels (see pooling.hpp). One thread per output element in forward and per input
// element in backward, channels fastest, so neighbouring threads touch neighbouring addresses.
// The arg-max index is the input position within the sample's image plane (row * width + column).
#include "cuda_check.hpp"
#include "launch.hpp"
#include "phalanx/core/error.hpp"
#include "pooling.hpp"
#include "pooling_windows.hpp"
#include "stored_value.hpp"

namespace phalanx::backend::cuda {

namespace {

// The plain integers the kernels need, copied out of the geometry once.
struct PoolingShape {
  int batch, channels, in_height, in_width, out_height, out_width, kernel_height, kernel_width, stride, padding;
};

PoolingShape shape_of(const PoolingGeometry& geometry) {
  return {geometry.batch,         geometry.channels,     geometry.in_height,    geometry.in_width,
          geometry.out_height(),  geometry.out_width(),  geometry.kernel_height, geometry.kernel_width,
          geometry.stride,        geometry.padding};
}

template <typename Stored>
__global__ void max_pooling_forward_kernel(PoolingShape shape, const Stored* input, Stored* output,
                                           std::int32_t* arg_max) {
  const std::int64_t count =
      static_cast<std::int64_t>(shape.batch) * shape.out_height * shape.out_width * shape.channels;
  for (std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count;
       index += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int channel = static_cast<int>(index % shape.channels);
    std::int64_t rest = index / shape.channels;
    const int out_column = static_cast<int>(rest % shape.out_width);
    rest /= shape.out_width;
    const int out_row = static_cast<int>(rest % shape.out_height);
    const std::int64_t sample = rest / shape.out_height;
    const Stored* sample_input = input + sample * shape.in_height * shape.in_width * shape.channels;
    float best = -INFINITY;
    int best_position = -1;
    for (int kernel_row = 0; kernel_row < shape.kernel_height; ++kernel_row) {
      const int row = window_start(out_row, shape.stride, shape.padding) + kernel_row;
      if (row < 0 || row >= shape.in_height) continue;
      for (int kernel_column = 0; kernel_column < shape.kernel_width; ++kernel_column) {
        const int column = window_start(out_column, shape.stride, shape.padding) + kernel_column;
        if (column < 0 || column >= shape.in_width) continue;
        const int position = row * shape.in_width + column;
        const float value =
            widen(sample_input[static_cast<std::int64_t>(position) * shape.channels + channel]);
        // The first maximum wins; a NaN wins and stays (as PyTorch's max pooling).
        if (best_position < 0 || (!isnan(best) && (value > best || isnan(value)))) {
          best = value;
          best_position = position;
        }
      }
    }
    output[index] = narrow<Stored>(best);
    if (arg_max) arg_max[index] = best_position;
  }
}

// Padding counts in the divisor: every window covers kernel_height * kernel_width positions of the padded input
// (the floor-divided output size keeps windows inside it).
template <typename Stored>
__global__ void average_pooling_forward_kernel(PoolingShape shape, const Stored* input, Stored* output) {
  const std::int64_t count =
      static_cast<std::int64_t>(shape.batch) * shape.out_height * shape.out_width * shape.channels;
  const float divisor = static_cast<float>(shape.kernel_height * shape.kernel_width);
  for (std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count;
       index += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int channel = static_cast<int>(index % shape.channels);
    std::int64_t rest = index / shape.channels;
    const int out_column = static_cast<int>(rest % shape.out_width);
    rest /= shape.out_width;
    const int out_row = static_cast<int>(rest % shape.out_height);
    const std::int64_t sample = rest / shape.out_height;
    const Stored* sample_input = input + sample * shape.in_height * shape.in_width * shape.channels;
    float sum = 0.0f;
    for (int kernel_row = 0; kernel_row < shape.kernel_height; ++kernel_row) {
      const int row = window_start(out_row, shape.stride, shape.padding) + kernel_row;
      if (row < 0 || row >= shape.in_height) continue;
      for (int kernel_column = 0; kernel_column < shape.kernel_width; ++kernel_column) {
        const int column = window_start(out_column, shape.stride, shape.padding) + kernel_column;
        if (column < 0 || column >= shape.in_width) continue;
        sum +=
            widen(sample_input[(static_cast<std::int64_t>(row) * shape.in_width + column) * shape.channels +
                               channel]);
      }
    }
    output[index] = narrow<Stored>(sum / divisor);
  }
}

template <typename Stored>
__global__ void pooling_backward_kernel(PoolingShape shape, bool is_max, const Stored* grad_output,
                                        const std::int32_t* arg_max, Stored* grad_input) {
  const std::int64_t count =
      static_cast<std::int64_t>(shape.batch) * shape.in_height * shape.in_width * shape.channels;
  const float divisor = static_cast<float>(shape.kernel_height * shape.kernel_width);
  for (std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count;
       index += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int channel = static_cast<int>(index % shape.channels);
    std::int64_t rest = index / shape.channels;
    const int column = static_cast<int>(rest % shape.in_width);
    rest /= shape.in_width;
    const int row = static_cast<int>(rest % shape.in_height);
    const std::int64_t sample = rest / shape.in_height;
    const int position = row * shape.in_width + column;
    int first_row, last_row, first_column, last_column;
    covering_outputs(row, shape.padding, shape.kernel_height, shape.stride, shape.out_height, first_row, last_row);
    covering_outputs(column, shape.padding, shape.kernel_width, shape.stride, shape.out_width, first_column,
                     last_column);
    const std::int64_t sample_offset = sample * shape.out_height * shape.out_width * shape.channels + channel;
    float sum = 0.0f;
    for (int out_row = first_row; out_row <= last_row; ++out_row)
      for (int out_column = first_column; out_column <= last_column; ++out_column) {
        const std::int64_t out_index =
            sample_offset +
            (static_cast<std::int64_t>(out_row) * shape.out_width + out_column) * shape.channels;
        if (!is_max || arg_max[out_index] == position) sum += widen(grad_output[out_index]);
      }
    grad_input[index] = narrow<Stored>(is_max ? sum : sum / divisor);
  }
}

}  // namespace

std::size_t pooling_workspace_bytes(const PoolingGeometry& geometry) {
  if (geometry.kind != PoolingKind::Max) return 0;
  return sizeof(std::int32_t) * static_cast<std::size_t>(geometry.batch) * geometry.out_height() *
         geometry.out_width() * geometry.channels;
}

void launch_pooling_forward(cudaStream_t stream, ComputePrecision storage, const PoolingGeometry& geometry,
                            const float* input, float* output, void* workspace) {
  const PoolingShape shape = shape_of(geometry);
  const std::int64_t count =
      static_cast<std::int64_t>(shape.batch) * shape.out_height * shape.out_width * shape.channels;
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    if (geometry.kind == PoolingKind::Max) {
      max_pooling_forward_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
          shape, stored<Stored>(input), stored<Stored>(output), static_cast<std::int32_t*>(workspace));
      PHALANX_CUDA_LAUNCHED("max_pooling_forward_kernel");
    } else {
      average_pooling_forward_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
          shape, stored<Stored>(input), stored<Stored>(output));
      PHALANX_CUDA_LAUNCHED("average_pooling_forward_kernel");
    }
  });
}

void launch_pooling_backward(cudaStream_t stream, ComputePrecision storage, const PoolingGeometry& geometry,
                             const float* grad_output, const void* workspace, float* grad_input) {
  const bool is_max = geometry.kind == PoolingKind::Max;
  PHALANX_CHECK(!is_max || workspace != nullptr, "max pooling backward needs the workspace of its forward");
  const PoolingShape shape = shape_of(geometry);
  const std::int64_t count =
      static_cast<std::int64_t>(shape.batch) * shape.in_height * shape.in_width * shape.channels;
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    pooling_backward_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
        shape, is_max, stored<Stored>(grad_output), static_cast<const std::int32_t*>(workspace),
        stored<Stored>(grad_input));
  });
  PHALANX_CUDA_LAUNCHED("pooling_backward_kernel");
}

}  // namespace phalanx::backend::cuda
