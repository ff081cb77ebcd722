// Every thread ORs "saw a non-finite value" into one int: the answer does not depend on the order
// in which threads arrive, so an atomic is as deterministic here as a tree reduction, and cheaper.
#include "cuda_check.hpp"
#include "finite_check.hpp"
#include "launch.hpp"

namespace phalanx::backend::cuda {
namespace {

__global__ void non_finite_kernel(std::int64_t count, const float* data, int* flag) {
  int seen = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    seen |= !isfinite(data[i]);
  // Only threads that saw one write, so the common all-finite case touches the flag not at all.
  if (seen) atomicOr(flag, 1);
}

}  // namespace

FiniteCheck::FiniteCheck() : flag_(sizeof(int)), host_flag_(sizeof(int)) {}

bool FiniteCheck::all_finite(cudaStream_t stream, std::int64_t count, const float* data) {
  if (count <= 0) return true;
  PHALANX_CUDA(cudaMemsetAsync(flag_.data(), 0, sizeof(int), stream));
  non_finite_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(count, data, flag_.as<int>());
  PHALANX_CUDA_LAUNCHED("non_finite_kernel");
  PHALANX_CUDA(cudaMemcpyAsync(host_flag_.data(), flag_.data(), sizeof(int), cudaMemcpyDeviceToHost, stream));
  PHALANX_CUDA(cudaStreamSynchronize(stream));
  return *host_flag_.as<int>() == 0;
}

}  // namespace phalanx::backend::cuda
