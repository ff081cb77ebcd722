// Batch normalisation kernels for 16-bit activations (see batch_norm_kernels.hpp). Each statistic
// takes two kernels: a partial pass in which a block of 32 channels x 8 thread rows reduces one
// chunk of rows (8 thread rows combined in a fixed order), and a per-channel pass that merges the
// chunks in double (fixed strides and order) and computes the per-channel affine map the last,
// element-wise kernel applies. The formulas are the CPU backend's, line for line where they can be.
#include "activation_functions.hpp"
#include "batch_norm_kernels.hpp"
#include "cuda_check.hpp"
#include "launch.hpp"
#include "phalanx/core/error.hpp"
#include "stored_value.hpp"

namespace phalanx::backend::cuda {

namespace {

constexpr int block_channels = 32;
constexpr int block_rows = 8;
constexpr int channel_threads = 128;
// The per-channel merge: blocks of 32 channels x 8 lanes, the lanes taking the chunks in a fixed
// stride and joined in lane order (one thread per channel would leave the GPU idle, each thread
// waiting on thousands of loads in turn); the 32 channels of a warp read neighbouring addresses.
constexpr int merge_lanes = 8;
// Chunks of 256 rows (the CPU backend's block), more only past 4096 chunks per channel: a chunk of
// a block's 32 channels is then 16 KB in bf16, so the statistics pass's second read of it comes
// from the L2 cache for every block resident at once, and its float sums stay accurate.
constexpr std::int64_t min_chunk_rows = 256;
constexpr std::int64_t max_chunks = 4096;

__device__ inline std::int64_t chunk_end(std::int64_t begin, std::int64_t rows_per_chunk, std::int64_t rows) {
  return begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
}

// The block's 8 thread-row values of `value` for its 32 channels, summed in thread-row order; the
// result is valid in thread row 0. `scratch` is free again when this returns.
__device__ float sum_thread_rows(float value, float (&scratch)[block_rows][block_channels]) {
  scratch[threadIdx.y][threadIdx.x] = value;
  __syncthreads();
  float total = 0.0f;
  if (threadIdx.y == 0) {
    total = scratch[0][threadIdx.x];
    for (int thread_row = 1; thread_row < block_rows; ++thread_row) total += scratch[thread_row][threadIdx.x];
  }
  __syncthreads();
  return total;
}

// The sum of `value` over the block's 8 lanes of each channel, in lane order (so the same bits on
// every run), known to every thread. `scratch` is free again when this returns.
__device__ double merge_lanes_sum(double value, double (&scratch)[merge_lanes][block_channels]) {
  scratch[threadIdx.y][threadIdx.x] = value;
  __syncthreads();
  double total = scratch[0][threadIdx.x];
  for (int lane = 1; lane < merge_lanes; ++lane) total += scratch[lane][threadIdx.x];
  __syncthreads();
  return total;
}

// Per chunk and channel: the sum of (x - shift), shift being the chunk's first row, then the sum of
// squared deviations about the chunk's mean (the second read of the chunk comes from the L2 cache).
template <typename Stored>
__global__ void moment_partials_kernel(std::int64_t rows, int channels, std::int64_t rows_per_chunk,
                                       const Stored* input, float* partial_sums) {
  __shared__ float scratch[block_rows][block_channels];
  __shared__ float chunk_centre[block_channels];
  const int channel = blockIdx.x * block_channels + threadIdx.x;
  const bool active = channel < channels;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.y) * rows_per_chunk;
  const std::int64_t end = chunk_end(begin, rows_per_chunk, rows);
  const float shift = active ? widen(input[begin * channels + channel]) : 0.0f;
  float sum = 0.0f;
  if (active)
    for (std::int64_t row = begin + threadIdx.y; row < end; row += block_rows)
      sum += widen(input[row * channels + channel]) - shift;
  const float shifted_sum = sum_thread_rows(sum, scratch);
  float* chunk_sums = partial_sums + static_cast<std::int64_t>(blockIdx.y) * 2 * channels;
  if (threadIdx.y == 0) {
    chunk_centre[threadIdx.x] = shifted_sum * (1.0f / static_cast<float>(end - begin));
    if (active) chunk_sums[channel] = shifted_sum;
  }
  __syncthreads();
  const float centre = chunk_centre[threadIdx.x];
  float squares = 0.0f;
  if (active)
    for (std::int64_t row = begin + threadIdx.y; row < end; row += block_rows) {
      const float deviation = (widen(input[row * channels + channel]) - shift) - centre;
      squares += deviation * deviation;
    }
  const float squared_deviations = sum_thread_rows(squares, scratch);
  if (threadIdx.y == 0 && active) chunk_sums[channels + channel] = squared_deviations;
}

// Per channel (32 to a block): the chunks merged in double (mean, then the squared deviations
// about it, exactly from each chunk's deviations about its own centre), the saved and running
// statistics as PyTorch keeps them, and the affine map (x - centre) * scale + offset.
template <typename Stored>
__global__ void moments_finish_kernel(std::int64_t rows, int channels, std::int64_t rows_per_chunk,
                                      std::int64_t chunk_count, const Stored* input,
                                      const float* partial_sums, const float* gamma, const float* beta,
                                      float momentum, float epsilon, float* running_mean,
                                      float* running_variance, float* saved_mean, float* saved_inverse_std,
                                      float* coefficients) {
  __shared__ double scratch[merge_lanes][block_channels];
  const int channel = blockIdx.x * block_channels + threadIdx.x;
  const bool active = channel < channels;
  const double count = static_cast<double>(rows);
  double total = 0;
  for (std::int64_t chunk = threadIdx.y; active && chunk < chunk_count; chunk += merge_lanes) {
    const std::int64_t begin = chunk * rows_per_chunk;
    const double chunk_size = static_cast<double>(chunk_end(begin, rows_per_chunk, rows) - begin);
    total +=
        chunk_size * widen(input[begin * channels + channel]) + partial_sums[chunk * 2 * channels + channel];
  }
  const double mean = merge_lanes_sum(total, scratch) / count;
  double squared_deviations = 0;
  for (std::int64_t chunk = threadIdx.y; active && chunk < chunk_count; chunk += merge_lanes) {
    const std::int64_t begin = chunk * rows_per_chunk;
    const float chunk_size = static_cast<float>(chunk_end(begin, rows_per_chunk, rows) - begin);
    const float shifted_sum = partial_sums[chunk * 2 * channels + channel];
    const double shifted_centre = shifted_sum * (1.0f / chunk_size);
    const double centre_offset = widen(input[begin * channels + channel]) + shifted_centre - mean;
    const double sum_about_centre = shifted_sum - chunk_size * shifted_centre;
    squared_deviations += partial_sums[chunk * 2 * channels + channels + channel] +
                          2.0 * centre_offset * sum_about_centre + chunk_size * centre_offset * centre_offset;
  }
  squared_deviations = merge_lanes_sum(squared_deviations, scratch);
  if (threadIdx.y != 0 || !active) return;
  const double variance = squared_deviations / count;
  const double inverse_std = 1.0 / sqrt(variance + epsilon);
  saved_mean[channel] = static_cast<float>(mean);
  saved_inverse_std[channel] = static_cast<float>(inverse_std);
  running_mean[channel] = static_cast<float>((1.0 - momentum) * running_mean[channel] + momentum * mean);
  running_variance[channel] = static_cast<float>((1.0 - momentum) * running_variance[channel] +
                                                 momentum * squared_deviations / (count - 1.0));
  // (x - float mean) * scale + (beta - (mean - float mean) * scale): the offset restores the bits
  // the float mean rounded away.
  const double scale = gamma[channel] * inverse_std;
  const float centre = static_cast<float>(mean);
  coefficients[channel] = centre;
  coefficients[channels + channel] = static_cast<float>(scale);
  coefficients[2 * channels + channel] = static_cast<float>(beta[channel] - (mean - centre) * scale);
}

// Inference: centre = running mean, scale = gamma / sqrt(running variance + epsilon), offset = beta.
__global__ void inference_coefficients_kernel(int channels, float epsilon, const float* gamma,
                                              const float* beta, const float* running_mean,
                                              const float* running_variance, float* coefficients) {
  const int channel = blockIdx.x * blockDim.x + threadIdx.x;
  if (channel >= channels) return;
  coefficients[channel] = running_mean[channel];
  coefficients[channels + channel] =
      static_cast<float>(gamma[channel] / sqrt(static_cast<double>(running_variance[channel]) + epsilon));
  coefficients[2 * channels + channel] = beta[channel];
}

// output = (x - centre) * scale + offset per channel, then the fused activation (ReLU as
// `x < 0 ? 0 : x`, the others as activation_functions.hpp computes them). With
// `vector` (channels a multiple of 4, aligned buffers) each thread moves four neighbouring elements,
// which never straddle a row, with one load and one store; the arithmetic per element is the same.
template <typename Stored, typename Activation, bool vector>
__global__ void affine_kernel(std::int64_t count, int channels, const Stored* input,
                              const float* coefficients, Activation activation, Stored* output) {
  const float* centre = coefficients;
  const float* scale = coefficients + channels;
  const float* offset = coefficients + 2 * channels;
  const auto normalised = [&](float value, int channel) {
    value = (value - centre[channel]) * scale[channel] + offset[channel];
    return narrow<Stored>(activation(value));
  };
  std::int64_t done = 0;
  if constexpr (vector) {
    const std::int64_t quads = count / 4;
    const auto* input_quads = reinterpret_cast<const Quad<Stored>*>(input);
    auto* output_quads = reinterpret_cast<Quad<Stored>*>(output);
    for (std::int64_t quad = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; quad < quads;
         quad += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      const int first_channel = static_cast<int>((quad * 4) % channels);
      const Quad<Stored> in = input_quads[quad];
      Quad<Stored> out;
      for (int lane = 0; lane < 4; ++lane)
        out.value[lane] = normalised(widen(in.value[lane]), first_channel + lane);
      output_quads[quad] = out;
    }
    done = quads * 4;
  }
  for (std::int64_t i = done + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    output[i] = normalised(widen(input[i]), static_cast<int>(i % channels));
}

// Per chunk and channel: the sums of dy and of dy * (x - mean).
template <typename Stored>
__global__ void gradient_partials_kernel(std::int64_t rows, int channels, std::int64_t rows_per_chunk,
                                         const Stored* input, const Stored* grad_output,
                                         const float* saved_mean, float* partial_sums) {
  __shared__ float scratch[block_rows][block_channels];
  const int channel = blockIdx.x * block_channels + threadIdx.x;
  const bool active = channel < channels;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.y) * rows_per_chunk;
  const std::int64_t end = chunk_end(begin, rows_per_chunk, rows);
  const float mean = active ? saved_mean[channel] : 0.0f;
  float sum = 0.0f, sum_times_centred = 0.0f;
  if (active)
    for (std::int64_t row = begin + threadIdx.y; row < end; row += block_rows) {
      const float gradient = widen(grad_output[row * channels + channel]);
      sum += gradient;
      sum_times_centred += gradient * (widen(input[row * channels + channel]) - mean);
    }
  const float chunk_sum = sum_thread_rows(sum, scratch);
  const float chunk_sum_times_centred = sum_thread_rows(sum_times_centred, scratch);
  if (threadIdx.y == 0 && active) {
    float* chunk_sums = partial_sums + static_cast<std::int64_t>(blockIdx.y) * 2 * channels;
    chunk_sums[channel] = chunk_sum;
    chunk_sums[channels + channel] = chunk_sum_times_centred;
  }
}

// Per channel (32 to a block): grad_beta, grad_gamma, and grad_input = gamma * inv_std * (dy -
// mean(dy) - x_hat * mean(dy * x_hat)) as grad_scale * dy + centred_scale * (x - mean) + offset.
__global__ void gradient_finish_kernel(std::int64_t rows, int channels, std::int64_t chunk_count,
                                       const float* partial_sums, const float* gamma,
                                       const float* saved_inverse_std, float* grad_gamma, float* grad_beta,
                                       float* coefficients) {
  __shared__ double scratch[merge_lanes][block_channels];
  const int channel = blockIdx.x * block_channels + threadIdx.x;
  const bool active = channel < channels;
  double sum = 0, sum_times_centred = 0;
  for (std::int64_t chunk = threadIdx.y; active && chunk < chunk_count; chunk += merge_lanes) {
    sum += partial_sums[chunk * 2 * channels + channel];
    sum_times_centred += partial_sums[chunk * 2 * channels + channels + channel];
  }
  sum = merge_lanes_sum(sum, scratch);
  sum_times_centred = merge_lanes_sum(sum_times_centred, scratch);
  if (threadIdx.y != 0 || !active) return;
  const double count = static_cast<double>(rows);
  const double inverse_std = saved_inverse_std[channel];
  grad_beta[channel] = static_cast<float>(sum);
  grad_gamma[channel] = static_cast<float>(sum_times_centred * inverse_std);
  const double grad_scale = gamma[channel] * inverse_std;
  coefficients[channel] = static_cast<float>(grad_scale);
  coefficients[channels + channel] =
      static_cast<float>(-grad_scale * inverse_std * inverse_std * sum_times_centred / count);
  coefficients[2 * channels + channel] = static_cast<float>(-grad_scale * sum / count);
}

// grad_input = grad_scale * dy + centred_scale * (x - mean) + offset per channel; `vector` as in
// affine_kernel.
template <typename Stored, bool vector>
__global__ void input_gradient_kernel(std::int64_t count, int channels, const Stored* input,
                                      const Stored* grad_output, const float* saved_mean,
                                      const float* coefficients, Stored* grad_input) {
  const float* grad_scale = coefficients;
  const float* centred_scale = coefficients + channels;
  const float* offset = coefficients + 2 * channels;
  const auto gradient = [&](float x, float dy, int channel) {
    return narrow<Stored>(grad_scale[channel] * dy + centred_scale[channel] * (x - saved_mean[channel]) +
                          offset[channel]);
  };
  std::int64_t done = 0;
  if constexpr (vector) {
    const std::int64_t quads = count / 4;
    const auto* input_quads = reinterpret_cast<const Quad<Stored>*>(input);
    const auto* grad_output_quads = reinterpret_cast<const Quad<Stored>*>(grad_output);
    auto* grad_input_quads = reinterpret_cast<Quad<Stored>*>(grad_input);
    for (std::int64_t quad = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; quad < quads;
         quad += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      const int first_channel = static_cast<int>((quad * 4) % channels);
      const Quad<Stored> x = input_quads[quad], dy = grad_output_quads[quad];
      Quad<Stored> out;
      for (int lane = 0; lane < 4; ++lane)
        out.value[lane] = gradient(widen(x.value[lane]), widen(dy.value[lane]), first_channel + lane);
      grad_input_quads[quad] = out;
    }
    done = quads * 4;
  }
  for (std::int64_t i = done + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    grad_input[i] = gradient(widen(input[i]), widen(grad_output[i]), static_cast<int>(i % channels));
}

unsigned int channel_blocks(int channels) {
  return static_cast<unsigned int>((channels + channel_threads - 1) / channel_threads);
}

unsigned int merge_blocks(int channels) {
  return static_cast<unsigned int>((channels + block_channels - 1) / block_channels);
}

dim3 partial_grid(int channels, std::int64_t chunks) {
  return dim3(static_cast<unsigned int>((channels + block_channels - 1) / block_channels),
              static_cast<unsigned int>(chunks));
}

template <typename Stored>
void launch_affine(cudaStream_t stream, std::int64_t count, int channels, FusedActivation activation,
                   const float* input, const float* coefficients, float* output) {
  const bool vector = channels % 4 == 0 && quad_aligned<Stored>(input) && quad_aligned<Stored>(output);
  const unsigned int blocks = grid_blocks(vector ? (count + 3) / 4 : count);
  const Stored* in = stored<Stored>(input);
  Stored* out = stored<Stored>(output);
  with_fused_activation(activation, [&](auto function) {
    using Function = decltype(function);
    if (vector)
      affine_kernel<Stored, Function, true>
          <<<blocks, threads_per_block, 0, stream>>>(count, channels, in, coefficients, function, out);
    else
      affine_kernel<Stored, Function, false>
          <<<blocks, threads_per_block, 0, stream>>>(count, channels, in, coefficients, function, out);
  });
  PHALANX_CUDA_LAUNCHED("affine_kernel");
}

template <typename Stored>
void launch_input_gradient(cudaStream_t stream, std::int64_t count, int channels, const float* input,
                           const float* grad_output, const float* saved_mean, const float* coefficients,
                           float* grad_input) {
  const bool vector = channels % 4 == 0 && quad_aligned<Stored>(input) && quad_aligned<Stored>(grad_output) &&
                      quad_aligned<Stored>(grad_input);
  const unsigned int blocks = grid_blocks(vector ? (count + 3) / 4 : count);
  if (vector)
    input_gradient_kernel<Stored, true><<<blocks, threads_per_block, 0, stream>>>(
        count, channels, stored<Stored>(input), stored<Stored>(grad_output), saved_mean, coefficients,
        stored<Stored>(grad_input));
  else
    input_gradient_kernel<Stored, false><<<blocks, threads_per_block, 0, stream>>>(
        count, channels, stored<Stored>(input), stored<Stored>(grad_output), saved_mean, coefficients,
        stored<Stored>(grad_input));
  PHALANX_CUDA_LAUNCHED("input_gradient_kernel");
}

}  // namespace

ReducedBatchNorm::Chunking ReducedBatchNorm::reserve_scratch(std::int64_t rows, int channels) {
  std::int64_t rows_per_chunk = (rows + max_chunks - 1) / max_chunks;
  if (rows_per_chunk < min_chunk_rows) rows_per_chunk = min_chunk_rows;
  const Chunking chunks{rows_per_chunk, (rows + rows_per_chunk - 1) / rows_per_chunk};
  partial_sums_.ensure(sizeof(float) * 2 * static_cast<std::size_t>(chunks.count) * channels);
  coefficients_.ensure(sizeof(float) * 3 * static_cast<std::size_t>(channels));
  return chunks;
}

void ReducedBatchNorm::forward_training(cudaStream_t stream, ComputePrecision storage,
                                        const BatchNormGeometry& geometry, const float* input,
                                        const float* gamma, const float* beta, float* output,
                                        float* running_mean, float* running_variance, float momentum,
                                        float* saved_mean, float* saved_inverse_std) {
  const std::int64_t rows = static_cast<std::int64_t>(geometry.batch) * geometry.spatial;
  const int channels = geometry.channels;
  PHALANX_CHECK(rows > 1, "batch norm in training needs more than one value per channel, got ", rows);
  if (channels <= 0) return;
  const Chunking chunks = reserve_scratch(rows, channels);
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    moment_partials_kernel<<<partial_grid(channels, chunks.count), dim3(block_channels, block_rows), 0,
                             stream>>>(rows, channels, chunks.rows_per_chunk, stored<Stored>(input),
                                       partial_sums_.as<float>());
    PHALANX_CUDA_LAUNCHED("moment_partials_kernel");
    moments_finish_kernel<<<merge_blocks(channels), dim3(block_channels, merge_lanes), 0, stream>>>(
        rows, channels, chunks.rows_per_chunk, chunks.count, stored<Stored>(input), partial_sums_.as<float>(),
        gamma, beta, momentum, geometry.epsilon, running_mean, running_variance, saved_mean,
        saved_inverse_std, coefficients_.as<float>());
    PHALANX_CUDA_LAUNCHED("moments_finish_kernel");
    launch_affine<Stored>(stream, rows * channels, channels, geometry.activation, input,
                          coefficients_.as<float>(), output);
  });
}

void ReducedBatchNorm::forward_inference(cudaStream_t stream, ComputePrecision storage,
                                         const BatchNormGeometry& geometry, const float* input,
                                         const float* gamma, const float* beta, const float* running_mean,
                                         const float* running_variance, float* output) {
  const std::int64_t rows = static_cast<std::int64_t>(geometry.batch) * geometry.spatial;
  const int channels = geometry.channels;
  if (rows <= 0 || channels <= 0) return;
  coefficients_.ensure(sizeof(float) * 3 * static_cast<std::size_t>(channels));
  inference_coefficients_kernel<<<channel_blocks(channels), channel_threads, 0, stream>>>(
      channels, geometry.epsilon, gamma, beta, running_mean, running_variance, coefficients_.as<float>());
  PHALANX_CUDA_LAUNCHED("inference_coefficients_kernel");
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    launch_affine<Stored>(stream, rows * channels, channels, geometry.activation, input,
                          coefficients_.as<float>(), output);
  });
}

void ReducedBatchNorm::backward(cudaStream_t stream, ComputePrecision storage,
                                const BatchNormGeometry& geometry, const float* input,
                                const float* grad_output, const float* gamma, const float* saved_mean,
                                const float* saved_inverse_std, float* grad_input, float* grad_gamma,
                                float* grad_beta) {
  const std::int64_t rows = static_cast<std::int64_t>(geometry.batch) * geometry.spatial;
  const int channels = geometry.channels;
  if (channels <= 0) return;
  if (rows <= 0) {
    // Sums over no values: zero, as the CPU backend writes them (not whatever the buffers held).
    PHALANX_CUDA(cudaMemsetAsync(grad_gamma, 0, sizeof(float) * static_cast<std::size_t>(channels), stream));
    PHALANX_CUDA(cudaMemsetAsync(grad_beta, 0, sizeof(float) * static_cast<std::size_t>(channels), stream));
    return;
  }
  const Chunking chunks = reserve_scratch(rows, channels);
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    gradient_partials_kernel<<<partial_grid(channels, chunks.count), dim3(block_channels, block_rows), 0,
                               stream>>>(rows, channels, chunks.rows_per_chunk, stored<Stored>(input),
                                         stored<Stored>(grad_output), saved_mean, partial_sums_.as<float>());
    PHALANX_CUDA_LAUNCHED("gradient_partials_kernel");
    gradient_finish_kernel<<<merge_blocks(channels), dim3(block_channels, merge_lanes), 0, stream>>>(
        rows, channels, chunks.count, partial_sums_.as<float>(), gamma, saved_inverse_std, grad_gamma,
        grad_beta, coefficients_.as<float>());
    PHALANX_CUDA_LAUNCHED("gradient_finish_kernel");
    const std::int64_t count = rows * channels;
    launch_input_gradient<Stored>(stream, count, channels, input, grad_output, saved_mean,
                                  coefficients_.as<float>(), grad_input);
  });
}

}  // namespace phalanx::backend::cuda
