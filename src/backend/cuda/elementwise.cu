// Element-wise kernels of the CUDA backend (see elementwise.hpp): grid-stride loops over
// contiguous elements; the activations of ActivationKind apply activation_functions.hpp. The arithmetic is
// written as the CPU backend's loops write it (no fast-math, IEEE division), so normalisation, ReLU, sums and
// scaling give the same bits on both; activations held in bf16/fp16 are widened, computed on in float, and
// rounded once (stored_value.hpp).
#include <cstdint>

#include "activation_functions.hpp"
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

// The activation kernels below apply one float function per element. Each thread moves four
// elements with one vector load per operand (16 bytes in fp32, 8 in bf16/fp16) where every pointer
// allows it, then the last count % 4 elements one by one; the function and its roundings are the
// same either way, so the bits do not depend on the path.
// output[i] = function(input[i]).
template <typename Stored, typename Function, bool vector>
__global__ void unary_kernel(std::int64_t count, Function function, const Stored* input, Stored* output) {
  std::int64_t done = 0;
  if constexpr (vector) {
    const std::int64_t quads = count / 4;
    const auto* input_quads = reinterpret_cast<const Quad<Stored>*>(input);
    auto* output_quads = reinterpret_cast<Quad<Stored>*>(output);
    for (std::int64_t quad = first_index(); quad < quads; quad += index_stride()) {
      const Quad<Stored> in = input_quads[quad];
      Quad<Stored> out;
      for (int lane = 0; lane < 4; ++lane) out.value[lane] = narrow<Stored>(function(widen(in.value[lane])));
      output_quads[quad] = out;
    }
    done = quads * 4;
  }
  for (std::int64_t i = done + first_index(); i < count; i += index_stride())
    output[i] = narrow<Stored>(function(widen(input[i])));
}

// output[i] = function(a[i], b[i]); output may be a or b (each element is read before it is written,
// by the thread that writes it).
template <typename Stored, typename Function, bool vector>
__global__ void binary_kernel(std::int64_t count, Function function, const Stored* a, const Stored* b,
                              Stored* output) {
  std::int64_t done = 0;
  if constexpr (vector) {
    const std::int64_t quads = count / 4;
    const auto* a_quads = reinterpret_cast<const Quad<Stored>*>(a);
    const auto* b_quads = reinterpret_cast<const Quad<Stored>*>(b);
    auto* output_quads = reinterpret_cast<Quad<Stored>*>(output);
    for (std::int64_t quad = first_index(); quad < quads; quad += index_stride()) {
      const Quad<Stored> left = a_quads[quad], right = b_quads[quad];
      Quad<Stored> out;
      for (int lane = 0; lane < 4; ++lane)
        out.value[lane] = narrow<Stored>(function(widen(left.value[lane]), widen(right.value[lane])));
      output_quads[quad] = out;
    }
    done = quads * 4;
  }
  for (std::int64_t i = done + first_index(); i < count; i += index_stride())
    output[i] = narrow<Stored>(function(widen(a[i]), widen(b[i])));
}

// `x < 0 ? 0 : x` keeps NaN as NaN, as torch.relu and the CPU backend do.
struct Relu {
  __device__ float operator()(float value) const { return value < 0.0f ? 0.0f : value; }
};

// The gradient passes where the forward output is positive. Widening and rounding a stored value
// gives it back unchanged, so the passed gradient keeps its bits.
struct ReluGradient {
  __device__ float operator()(float output, float grad_output) const {
    return output > 0.0f ? grad_output : 0.0f;
  }
};

struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// The sum in float, then `x < 0 ? 0 : x`, then one rounding: add and relu_forward in one (ReLU
// commutes with the rounding, so the bits are those of the two kernels).
struct SumRelu {
  __device__ float operator()(float a, float b) const {
    const float sum = a + b;
    return sum < 0.0f ? 0.0f : sum;
  }
};

template <typename Function>
void launch_unary(cudaStream_t stream, ComputePrecision storage, std::int64_t count, Function function,
                  const float* input, float* output, const char* launch) {
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    const bool vector = quad_aligned<Stored>(input) && quad_aligned<Stored>(output);
    const std::int64_t work = vector ? (count + 3) / 4 : count;
    if (vector)
      unary_kernel<Stored, Function, true><<<grid_blocks(work), threads_per_block, 0, stream>>>(
          count, function, stored<Stored>(input), stored<Stored>(output));
    else
      unary_kernel<Stored, Function, false><<<grid_blocks(work), threads_per_block, 0, stream>>>(
          count, function, stored<Stored>(input), stored<Stored>(output));
  });
  // PHALANX_CUDA_LAUNCHED with the caller's name (the macro wants a literal).
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) throw_cuda_error(status, launch, __FILE__, __LINE__);
}

template <typename Function>
void launch_binary(cudaStream_t stream, ComputePrecision storage, std::int64_t count, Function function,
                   const float* a, const float* b, float* output, const char* launch) {
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    const bool vector = quad_aligned<Stored>(a) && quad_aligned<Stored>(b) && quad_aligned<Stored>(output);
    const std::int64_t work = vector ? (count + 3) / 4 : count;
    if (vector)
      binary_kernel<Stored, Function, true><<<grid_blocks(work), threads_per_block, 0, stream>>>(
          count, function, stored<Stored>(a), stored<Stored>(b), stored<Stored>(output));
    else
      binary_kernel<Stored, Function, false><<<grid_blocks(work), threads_per_block, 0, stream>>>(
          count, function, stored<Stored>(a), stored<Stored>(b), stored<Stored>(output));
  });
  // PHALANX_CUDA_LAUNCHED with the caller's name (the macro wants a literal).
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) throw_cuda_error(status, launch, __FILE__, __LINE__);
}

__global__ void scale_kernel(std::int64_t count, float factor, float* data) {
  for (std::int64_t i = first_index(); i < count; i += index_stride()) data[i] *= factor;
}

// The CPU backend's rounding: (1 - decay) * source rounded (__fmul_rn keeps nvcc from fusing it),
// then one fused multiply-add.
__global__ void moving_average_kernel(std::int64_t count, float decay, const float* source, float* average) {
  const float complement = 1.0f - decay;
  for (std::int64_t i = first_index(); i < count; i += index_stride())
    average[i] = __fmaf_rn(decay, average[i], __fmul_rn(complement, source[i]));
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
  launch_unary(stream, storage, count, Relu{}, input, output, "launch of relu_forward_kernel");
}

void launch_relu_backward(cudaStream_t stream, ComputePrecision storage, std::int64_t count,
                          const float* output, const float* grad_output, float* grad_input) {
  launch_binary(stream, storage, count, ReluGradient{}, output, grad_output, grad_input,
                "launch of relu_backward_kernel");
}

void launch_activation_forward(cudaStream_t stream, ComputePrecision storage, ActivationKind kind,
                               std::int64_t count, const float* input, float* output) {
  const char* launch = "launch of activation_forward_kernel";
  switch (kind) {
    case ActivationKind::Relu6:
      return launch_unary(stream, storage, count, Relu6Activation{}, input, output, launch);
    case ActivationKind::Sigmoid:
      return launch_unary(stream, storage, count, SigmoidActivation{}, input, output, launch);
    case ActivationKind::Hardsigmoid:
      return launch_unary(stream, storage, count, HardsigmoidActivation{}, input, output, launch);
    case ActivationKind::Silu:
      return launch_unary(stream, storage, count, SiluActivation{}, input, output, launch);
    case ActivationKind::Hardswish:
      return launch_unary(stream, storage, count, HardswishActivation{}, input, output, launch);
    case ActivationKind::Gelu:
      return launch_unary(stream, storage, count, GeluActivation{}, input, output, launch);
    case ActivationKind::GeluTanh:
      return launch_unary(stream, storage, count, GeluTanhActivation{}, input, output, launch);
  }
}

void launch_activation_backward(cudaStream_t stream, ComputePrecision storage, ActivationKind kind,
                                std::int64_t count, const float* input, const float* output,
                                const float* grad_output, float* grad_input) {
  const char* launch = "launch of activation_backward_kernel";
  // Each gradient reads one of the two (backward_reads_output), element by element with grad_output.
  switch (kind) {
    case ActivationKind::Relu6:
      return launch_binary(stream, storage, count, Relu6Gradient{}, output, grad_output, grad_input, launch);
    case ActivationKind::Sigmoid:
      return launch_binary(stream, storage, count, SigmoidGradient{}, output, grad_output, grad_input,
                           launch);
    case ActivationKind::Hardsigmoid:
      return launch_binary(stream, storage, count, HardsigmoidGradient{}, output, grad_output, grad_input,
                           launch);
    case ActivationKind::Silu:
      return launch_binary(stream, storage, count, SiluGradient{}, input, grad_output, grad_input, launch);
    case ActivationKind::Hardswish:
      return launch_binary(stream, storage, count, HardswishGradient{}, input, grad_output, grad_input,
                           launch);
    case ActivationKind::Gelu:
      return launch_binary(stream, storage, count, GeluGradient{}, input, grad_output, grad_input, launch);
    case ActivationKind::GeluTanh:
      return launch_binary(stream, storage, count, GeluTanhGradient{}, input, grad_output, grad_input,
                           launch);
  }
}

void launch_add(cudaStream_t stream, ComputePrecision storage, std::int64_t count, const float* a,
                const float* b, float* output) {
  launch_binary(stream, storage, count, Sum{}, a, b, output, "launch of add_kernel");
}

void launch_add_relu(cudaStream_t stream, ComputePrecision storage, std::int64_t count, const float* a,
                     const float* b, float* output) {
  launch_binary(stream, storage, count, SumRelu{}, a, b, output, "launch of add_relu_kernel");
}

void launch_accumulate(cudaStream_t stream, ComputePrecision storage, std::int64_t count, const float* source,
                       float* destination) {
  // destination + source, the order of the CPU backend's `destination[i] += source[i]`.
  launch_binary(stream, storage, count, Sum{}, destination, source, destination,
                "launch of accumulate_kernel");
}

void launch_scale(cudaStream_t stream, std::int64_t count, float factor, float* data) {
  if (count <= 0) return;
  scale_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, factor, data);
  PHALANX_CUDA_LAUNCHED("scale_kernel");
}

void launch_moving_average(cudaStream_t stream, std::int64_t count, float decay, const float* source,
                           float* average) {
  if (count <= 0) return;
  moving_average_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, decay, source, average);
  PHALANX_CUDA_LAUNCHED("moving_average_kernel");
}

void launch_add_bias_rows(cudaStream_t stream, std::int64_t rows, int columns, const float* bias,
                          float* data) {
  const std::int64_t count = rows * columns;
  if (count <= 0) return;
  add_bias_rows_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, columns, bias, data);
  PHALANX_CUDA_LAUNCHED("add_bias_rows_kernel");
}

}  // namespace phalanx::backend::cuda
