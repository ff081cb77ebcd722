// One thread per output value: its image's window, the row and column taps and the weighted sum
// of core/bilinear_taps.hpp, the integer arithmetic of the loader's data::resample_bilinear, so a
// GPU rank's crops are a CPU rank's bytes. The windows were checked on the host when drawn.
#include "cuda_check.hpp"
#include "launch.hpp"
#include "phalanx/core/bilinear_taps.hpp"
#include "resample.hpp"

namespace phalanx::backend::cuda {
namespace {

__global__ void resample_kernel(ResampleGeometry geometry, const std::uint8_t* images,
                                const std::int32_t* windows, std::uint8_t* output, std::int64_t count) {
  const int channels = geometry.channels;
  const std::int64_t output_elements =
      std::int64_t{geometry.output_height} * geometry.output_width * channels;
  const std::int64_t source_elements =
      std::int64_t{geometry.source_height} * geometry.source_width * channels;
  const std::int64_t row_bytes = std::int64_t{geometry.source_width} * channels;
  for (std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count;
       index += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t image = index / output_elements, element = index % output_elements;
    const int channel = static_cast<int>(element % channels);
    const std::int64_t pixel = element / channels;
    const int y = static_cast<int>(pixel / geometry.output_width),
              x = static_cast<int>(pixel % geometry.output_width);
    const std::int32_t* window = windows + image * resample_window_words;
    const BilinearTap row = bilinear_tap(y + window[6], window[0], window[2], window[4]);
    const BilinearTap column = bilinear_tap(x + window[7], window[1], window[3], window[5]);
    output[index] = bilinear_value(images + image * source_elements, row_bytes, channels, channel, row,
                                   column, 2 * std::int64_t{window[4]}, 2 * std::int64_t{window[5]});
  }
}

}  // namespace

void launch_resample_images(cudaStream_t stream, const ResampleGeometry& geometry, const std::uint8_t* images,
                            const std::int32_t* windows, std::uint8_t* output) {
  const std::int64_t count =
      std::int64_t{geometry.batch} * geometry.output_height * geometry.output_width * geometry.channels;
  if (count <= 0) return;
  resample_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(geometry, images, windows, output,
                                                                        count);
  PHALANX_CUDA_LAUNCHED("resample_kernel");
}

}  // namespace phalanx::backend::cuda
