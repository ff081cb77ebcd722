// The fused forward epilogue of convolutions and linear layers (see forward_epilogue.hpp): one
// grid-stride kernel per combination of result type, bias and ReLU, so none of them branches per
// element on what to do.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.hpp"
#include "forward_epilogue.hpp"
#include "launch.hpp"

namespace phalanx::backend::cuda {
namespace {

__device__ inline float to_float(float value) {
  return value;
}
__device__ inline float to_float(__nv_bfloat16 value) {
  return __bfloat162float(value);
}
__device__ inline float to_float(__half value) {
  return __half2float(value);
}

template <typename Result, bool with_bias, bool with_relu>
__global__ void forward_epilogue_kernel(const Result* result, std::int64_t count, int columns,
                                        const float* bias, float* output) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float value = to_float(result[i]);
    if constexpr (with_bias) value += bias[i % columns];
    if constexpr (with_relu) value = value < 0.0f ? 0.0f : value;
    output[i] = value;
  }
}

template <typename Result, bool with_bias, bool with_relu>
void launch_typed(cudaStream_t stream, const void* result, std::int64_t count, int columns, const float* bias,
                  float* output) {
  forward_epilogue_kernel<Result, with_bias, with_relu><<<grid_blocks(count), threads_per_block, 0, stream>>>(
      static_cast<const Result*>(result), count, columns, bias, output);
  PHALANX_CUDA_LAUNCHED("forward_epilogue_kernel");
}

template <typename Result>
void launch_for_type(cudaStream_t stream, const void* result, std::int64_t count, int columns,
                     const float* bias, bool relu, float* output) {
  if (bias && relu) launch_typed<Result, true, true>(stream, result, count, columns, bias, output);
  if (bias && !relu) launch_typed<Result, true, false>(stream, result, count, columns, bias, output);
  if (!bias && relu) launch_typed<Result, false, true>(stream, result, count, columns, bias, output);
  if (!bias && !relu) launch_typed<Result, false, false>(stream, result, count, columns, bias, output);
}

}  // namespace

void launch_forward_epilogue(cudaStream_t stream, ComputePrecision precision, const void* result,
                             std::int64_t rows, int columns, const float* bias, FusedActivation activation,
                             float* output) {
  const std::int64_t count = rows * columns;
  const bool relu = activation == FusedActivation::Relu;
  if (count <= 0) return;
  switch (precision) {
    case ComputePrecision::Float32:
      if (bias || relu) launch_for_type<float>(stream, result, count, columns, bias, relu, output);
      break;
    case ComputePrecision::BFloat16:
      launch_for_type<__nv_bfloat16>(stream, result, count, columns, bias, relu, output);
      break;
    case ComputePrecision::Float16:
      launch_for_type<__half>(stream, result, count, columns, bias, relu, output);
      break;
  }
}

}  // namespace phalanx::backend::cuda
