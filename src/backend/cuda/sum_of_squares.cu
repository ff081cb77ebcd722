// The first kernel leaves one partial sum per block (each thread's grid-stride sum, then a tree in
// shared memory); the second adds those in a fixed order in one block. The grid depends on the
// element count only, so the order of every addition does too.
#include "cuda_check.hpp"
#include "launch.hpp"
#include "sum_of_squares.hpp"

namespace phalanx::backend::cuda {
namespace {

constexpr unsigned int largest_grid = 8192;  // grid_blocks' cap

// Sums the block's threads' values in a fixed tree; thread 0 returns the total.
__device__ double block_sum(double value) {
  __shared__ double sums[threads_per_block];
  sums[threadIdx.x] = value;
  __syncthreads();
  for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  return sums[0];
}

__global__ void partial_sums_kernel(std::int64_t count, const float* data, double* partial_sums) {
  double sum = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const double value = data[i];
    sum += value * value;
  }
  const double total = block_sum(sum);
  if (threadIdx.x == 0) partial_sums[blockIdx.x] = total;
}

__global__ void total_kernel(unsigned int partials, const double* partial_sums, double* total) {
  double sum = 0;
  for (unsigned int i = threadIdx.x; i < partials; i += blockDim.x) sum += partial_sums[i];
  const double block_total = block_sum(sum);
  if (threadIdx.x == 0) *total = block_total;
}

}  // namespace

SumOfSquares::SumOfSquares()
    : partial_sums_(sizeof(double) * (largest_grid + 1)), host_total_(sizeof(double)) {}

double SumOfSquares::sum(cudaStream_t stream, std::int64_t count, const float* data) {
  if (count <= 0) return 0.0;
  const unsigned int blocks = grid_blocks(count);
  double* partial_sums = partial_sums_.as<double>();
  double* total = partial_sums + largest_grid;
  partial_sums_kernel<<<blocks, threads_per_block, 0, stream>>>(count, data, partial_sums);
  PHALANX_CUDA_LAUNCHED("partial_sums_kernel");
  total_kernel<<<1, threads_per_block, 0, stream>>>(blocks, partial_sums, total);
  PHALANX_CUDA_LAUNCHED("total_kernel");
  PHALANX_CUDA(cudaMemcpyAsync(host_total_.data(), total, sizeof(double), cudaMemcpyDeviceToHost, stream));
  PHALANX_CUDA(cudaStreamSynchronize(stream));
  return *host_total_.as<double>();
}

}  // namespace phalanx::backend::cuda
