// Float <-> bf16 conversion kernels (see bfloat16_conversion.hpp): grid-stride loops with the CUDA
// backend's launch geometry, so any bucket size is covered by a bounded grid.
#include <cuda_bf16.h>

#include "../../backend/cuda/cuda_check.hpp"
#include "../../backend/cuda/launch.hpp"
#include "bfloat16_conversion.hpp"

namespace phalanx::comm::nccl {
namespace {

__global__ void narrow_kernel(const float* values, __nv_bfloat16* narrowed, std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count;
       index += stride)
    narrowed[index] = __float2bfloat16_rn(values[index]);
}

__global__ void widen_kernel(const __nv_bfloat16* narrowed, float* values, std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count;
       index += stride)
    values[index] = __bfloat162float(narrowed[index]);
}

}  // namespace

// __nv_bfloat16 is a 16-bit struct holding the raw bits, so the uint16_t buffers alias it exactly.
static_assert(sizeof(__nv_bfloat16) == sizeof(std::uint16_t));

void float_to_bfloat16(const float* values, std::uint16_t* bfloat16_values, std::int64_t count,
                       cudaStream_t stream) {
  if (count <= 0) return;
  using backend::cuda::grid_blocks;
  using backend::cuda::threads_per_block;
  narrow_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
      values, reinterpret_cast<__nv_bfloat16*>(bfloat16_values), count);
  PHALANX_CUDA_LAUNCHED("narrow_kernel");
}

void bfloat16_to_float(const std::uint16_t* bfloat16_values, float* values, std::int64_t count,
                       cudaStream_t stream) {
  if (count <= 0) return;
  using backend::cuda::grid_blocks;
  using backend::cuda::threads_per_block;
  widen_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
      reinterpret_cast<const __nv_bfloat16*>(bfloat16_values), values, count);
  PHALANX_CUDA_LAUNCHED("widen_kernel");
}

}  // namespace phalanx::comm::nccl
