// Per-sample transpose [rows, columns] -> [columns, rows] on the device: NHWC <-> PyTorch's CHW
// order at a flatten, and conv weights [out, in, kh, kw] <-> cuDNN's [out, kh, kw, in]. 32x32 tiles
// through shared memory (one padding column avoids bank conflicts) so that both the reads and
// the writes are coalesced.
#include "cuda_check.hpp"
#include "elementwise.hpp"

namespace phalanx::backend::cuda {

namespace {

constexpr int tile = 32;
constexpr int tile_rows_per_pass = 8;  // a 32x8 block moves a 32x32 tile in four passes

// Pure data movement: Element is float, or a 2-byte word for bf16/fp16 (whose bits are moved as they are).
template <typename Element>
__global__ void transpose_samples_kernel(std::int64_t batch, std::int64_t rows, std::int64_t columns,
                                         const Element* input, Element* output) {
  __shared__ Element buffer[tile][tile + 1];
  const std::int64_t row_tiles = (rows + tile - 1) / tile;
  const std::int64_t column_start = static_cast<std::int64_t>(blockIdx.x) * tile;
  const std::int64_t sample_size = rows * columns;
  for (std::int64_t sample = blockIdx.z; sample < batch; sample += gridDim.z) {
    const Element* sample_input = input + sample * sample_size;
    Element* sample_output = output + sample * sample_size;
    for (std::int64_t row_tile = blockIdx.y; row_tile < row_tiles; row_tile += gridDim.y) {
      const std::int64_t row_start = row_tile * tile;
      for (int offset = threadIdx.y; offset < tile; offset += tile_rows_per_pass) {
        const std::int64_t row = row_start + offset, column = column_start + threadIdx.x;
        if (row < rows && column < columns)
          buffer[offset][threadIdx.x] = sample_input[row * columns + column];
      }
      __syncthreads();
      // Output row = input column; consecutive threads write consecutive input rows.
      for (int offset = threadIdx.y; offset < tile; offset += tile_rows_per_pass) {
        const std::int64_t column = column_start + offset, row = row_start + threadIdx.x;
        if (row < rows && column < columns) sample_output[column * rows + row] = buffer[threadIdx.x][offset];
      }
      __syncthreads();  // the buffer is refilled for the next tile
    }
  }
}

}  // namespace

void launch_transpose_samples(cudaStream_t stream, ComputePrecision storage, std::int64_t batch,
                              std::int64_t rows, std::int64_t columns, const float* input, float* output) {
  if (batch <= 0 || rows <= 0 || columns <= 0) return;
  const std::int64_t column_tiles = (columns + tile - 1) / tile, row_tiles = (rows + tile - 1) / tile;
  const dim3 grid(static_cast<unsigned int>(column_tiles),
                  static_cast<unsigned int>(row_tiles < 65535 ? row_tiles : 65535),
                  static_cast<unsigned int>(batch < 65535 ? batch : 65535));
  if (storage == ComputePrecision::Float32)
    transpose_samples_kernel<<<grid, dim3(tile, tile_rows_per_pass), 0, stream>>>(batch, rows, columns, input,
                                                                                  output);
  else
    transpose_samples_kernel<<<grid, dim3(tile, tile_rows_per_pass), 0, stream>>>(
        batch, rows, columns, reinterpret_cast<const std::uint16_t*>(input),
        reinterpret_cast<std::uint16_t*>(output));
  PHALANX_CUDA_LAUNCHED("transpose_samples_kernel");
}

}  // namespace phalanx::backend::cuda
