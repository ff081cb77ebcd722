// Column sums (see reduction.hpp). Pass one: each block takes 32 columns of one chunk of rows;
// its 8 thread rows stride through the chunk (coalesced along the columns) and are combined in
// a fixed order. Pass two: each column adds its chunks' partial sums in chunk order, in double.
// The chunk size depends only on the shape, so the summation order and hence the bits are fixed.
#include "cuda_check.hpp"
#include "launch.hpp"
#include "reduction.hpp"
#include "stored_value.hpp"

namespace phalanx::backend::cuda {

namespace {

constexpr int block_columns = 32;
constexpr int block_rows = 8;
constexpr std::int64_t max_chunks = 1024;  // enough blocks to fill an H200 even for 64 columns

template <typename Stored>
__global__ void partial_column_sums_kernel(std::int64_t rows, int columns, std::int64_t rows_per_chunk,
                                           const Stored* input, float* partial_sums) {
  __shared__ float sums[block_rows][block_columns];
  const int column = blockIdx.x * block_columns + threadIdx.x;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.y) * rows_per_chunk;
  const std::int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  float sum = 0.0f;
  if (column < columns)
    for (std::int64_t row = begin + threadIdx.y; row < end; row += block_rows)
      sum += widen(input[row * columns + column]);
  sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && column < columns) {
    float total = sums[0][threadIdx.x];
    for (int thread_row = 1; thread_row < block_rows; ++thread_row) total += sums[thread_row][threadIdx.x];
    partial_sums[static_cast<std::int64_t>(blockIdx.y) * columns + column] = total;
  }
}

__global__ void finish_column_sums_kernel(std::int64_t chunks, int columns, const float* partial_sums,
                                          float* output) {
  const int column = blockIdx.x * blockDim.x + threadIdx.x;
  if (column >= columns) return;
  double total = 0;
  for (std::int64_t chunk = 0; chunk < chunks; ++chunk) total += partial_sums[chunk * columns + column];
  output[column] = static_cast<float>(total);
}

}  // namespace

void ColumnSums::sum(cudaStream_t stream, ComputePrecision storage, std::int64_t rows, int columns,
                     const float* input, float* output) {
  if (columns <= 0) return;
  if (rows <= 0) {
    PHALANX_CUDA(cudaMemsetAsync(output, 0, sizeof(float) * columns, stream));
    return;
  }
  // At least 64 rows per chunk so that small matrices stay in one or a few blocks.
  std::int64_t rows_per_chunk = (rows + max_chunks - 1) / max_chunks;
  if (rows_per_chunk < 64) rows_per_chunk = 64;
  const std::int64_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  partial_sums_.ensure(sizeof(float) * static_cast<std::size_t>(chunks) * columns);
  const dim3 grid(static_cast<unsigned int>((columns + block_columns - 1) / block_columns),
                  static_cast<unsigned int>(chunks));
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    partial_column_sums_kernel<<<grid, dim3(block_columns, block_rows), 0, stream>>>(
        rows, columns, rows_per_chunk, stored<Stored>(input), partial_sums_.as<float>());
  });
  PHALANX_CUDA_LAUNCHED("partial_column_sums_kernel");
  finish_column_sums_kernel<<<(columns + threads_per_block - 1) / threads_per_block, threads_per_block, 0,
                              stream>>>(chunks, columns, partial_sums_.as<float>(), output);
  PHALANX_CUDA_LAUNCHED("finish_column_sums_kernel");
}

}  // namespace phalanx::backend::cuda
