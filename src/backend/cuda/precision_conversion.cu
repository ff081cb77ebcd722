// Element-wise casts for the reduced-precision ops (see precision_conversion.hpp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.hpp"
#include "launch.hpp"
#include "phalanx/core/error.hpp"
#include "precision_conversion.hpp"

namespace phalanx::backend::cuda {
namespace {

__device__ inline void from_float(float value, __nv_bfloat16& out) {
  out = __float2bfloat16_rn(value);
}
__device__ inline void from_float(float value, __half& out) {
  out = __float2half_rn(value);
}
__device__ inline float to_float(__nv_bfloat16 value) {
  return __bfloat162float(value);
}
__device__ inline float to_float(__half value) {
  return __half2float(value);
}

template <typename Narrow>
__global__ void from_float_kernel(const float* source, Narrow* destination, std::int64_t count) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    from_float(source[i], destination[i]);
}

template <typename Narrow>
__global__ void to_float_kernel(const Narrow* source, float* destination, std::int64_t count) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    destination[i] = to_float(source[i]);
}

}  // namespace

std::size_t element_bytes(ComputePrecision precision) {
  return precision == ComputePrecision::Float32 ? sizeof(float) : 2;
}

void launch_convert_from_float(cudaStream_t stream, ComputePrecision precision, const float* source,
                               void* destination, std::int64_t count) {
  if (count <= 0) return;
  PHALANX_CHECK(precision != ComputePrecision::Float32, "no conversion to fp32 from fp32");
  if (precision == ComputePrecision::BFloat16) {
    from_float_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
        source, static_cast<__nv_bfloat16*>(destination), count);
  } else {
    from_float_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
        source, static_cast<__half*>(destination), count);
  }
  PHALANX_CUDA_LAUNCHED("from_float_kernel");
}

void launch_convert_to_float(cudaStream_t stream, ComputePrecision precision, const void* source,
                             float* destination, std::int64_t count) {
  if (count <= 0) return;
  PHALANX_CHECK(precision != ComputePrecision::Float32, "no conversion to fp32 from fp32");
  if (precision == ComputePrecision::BFloat16) {
    to_float_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(source), destination, count);
  } else {
    to_float_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(static_cast<const __half*>(source),
                                                                          destination, count);
  }
  PHALANX_CUDA_LAUNCHED("to_float_kernel");
}

void launch_convert(cudaStream_t stream, ComputePrecision from, const void* source, ComputePrecision to,
                    void* destination, std::int64_t count) {
  if (from == ComputePrecision::Float32) {
    launch_convert_from_float(stream, to, static_cast<const float*>(source), destination, count);
    return;
  }
  PHALANX_CHECK(to == ComputePrecision::Float32, "conversions between bf16 and fp16 are not supported");
  launch_convert_to_float(stream, from, source, static_cast<float*>(destination), count);
}

}  // namespace phalanx::backend::cuda
