// One thread per output element: find where the crop and flip take it from (zero outside the image,
// inside the cutout square or inside the erased rectangle) and normalise with the formula of
// normalize_images_kernel. The same integer arithmetic and the same IEEE float operations as the
// CPU backend, so the bits agree.
#include "augment.hpp"
#include "cuda_check.hpp"
#include "launch.hpp"
#include "stored_value.hpp"

namespace phalanx::backend::cuda {
namespace {

template <typename Stored>
__global__ void augment_normalize_kernel(AugmentGeometry geometry, const std::uint8_t* images,
                                         const std::int32_t* draws, const float* mean,
                                         const float* standard_deviation, Stored* output,
                                         std::int64_t count) {
  const int width = geometry.width, height = geometry.height, channels = geometry.channels;
  for (std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count;
       index += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int channel = static_cast<int>(index % channels);
    const std::int64_t pixel = index / channels;
    const int x = static_cast<int>(pixel % width);
    const std::int64_t image_row = pixel / width;
    const int y = static_cast<int>(image_row % height);
    const std::int64_t sample = image_row / height;
    const std::int32_t* sample_draws = draws + augment_draw_words * sample;
    const int source_y = y + sample_draws[0];
    const int source_x = (sample_draws[2] != 0 ? width - 1 - x : x) + sample_draws[1];
    const bool cut = y >= sample_draws[3] && y < sample_draws[3] + geometry.cutout && x >= sample_draws[4] &&
                     x < sample_draws[4] + geometry.cutout;
    const bool erased = y >= sample_draws[5] && y < sample_draws[5] + sample_draws[7] &&
                        x >= sample_draws[6] && x < sample_draws[6] + sample_draws[8];
    const bool inside =
        !cut && !erased && source_y >= 0 && source_y < height && source_x >= 0 && source_x < width;
    const float value =
        inside ? static_cast<float>(
                     images[((sample * height + source_y) * width + source_x) * channels + channel])
               : 0.0f;
    output[index] = narrow<Stored>((value / 255.0f - mean[channel]) / standard_deviation[channel]);
  }
}

}  // namespace

void launch_augment_normalize_images(cudaStream_t stream, ComputePrecision storage,
                                     const AugmentGeometry& geometry, const std::uint8_t* images,
                                     const std::int32_t* draws, const float* mean,
                                     const float* standard_deviation, float* output) {
  const std::int64_t count =
      static_cast<std::int64_t>(geometry.batch) * geometry.height * geometry.width * geometry.channels;
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    augment_normalize_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
        geometry, images, draws, mean, standard_deviation, stored<Stored>(output), count);
  });
  PHALANX_CUDA_LAUNCHED("augment_normalize_kernel");
}

}  // namespace phalanx::backend::cuda
