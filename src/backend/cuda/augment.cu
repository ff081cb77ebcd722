// One thread per output element: find where the crop and flip take it from (zero outside the image,
// inside the cutout square or inside the erased rectangle) and normalise with the formula of
// normalize_images_kernel. The same integer arithmetic and the same IEEE float operations as the
// CPU backend, so the bits agree. With TrivialAugment or RandAugment on, one block per image
// instead: crop and flip into scratch, the ops of core/augment_operations.cpp one after the other
// (ported with explicitly rounded intrinsics, which the compiler never fuses into an FMA), then
// cutout, erasing and normalisation.
#include "augment.hpp"
#include "cuda_check.hpp"
#include "launch.hpp"
#include "phalanx/core/augment_operations.hpp"
#include "phalanx/core/error.hpp"
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

using Pixel = std::uint8_t;

static_assert(augment_draw_words == 9 + 7 * max_augment_operations,
              "an auto-augment op travels as 7 words after the 9 of the crop, flip, cutout and erasing");
constexpr int operation_threads = 256;  // also the histogram's bin count: one bin per thread

// What the ops' reductions share within the block.
struct OperationShared {
  int histogram[256];
  Pixel table[256];
  unsigned int lowest, highest;
  unsigned long long sum;
};

__device__ Pixel to_pixel(float value) {
  return static_cast<Pixel>(static_cast<int>(fminf(fmaxf(value, 0.0f), 255.0f)));
}

__device__ Pixel blend(float ratio, float complement, float image, float degenerate) {
  return to_pixel(__fadd_rn(__fmul_rn(ratio, image), __fmul_rn(complement, degenerate)));
}

__device__ Pixel grayscale(const Pixel* pixel) {
  const float red_green = __fadd_rn(__fmul_rn(0.2989f, static_cast<float>(pixel[0])),
                                    __fmul_rn(0.587f, static_cast<float>(pixel[1])));
  return static_cast<Pixel>(
      static_cast<int>(__fadd_rn(red_green, __fmul_rn(0.114f, static_cast<float>(pixel[2])))));
}

// One op from `source` to `destination` by the whole block; every thread calls it with the same op
// (the reductions synchronise the block).
__device__ void apply_operation(int operation, const float* parameters, const Pixel* source,
                                Pixel* destination, int height, int width, int channels,
                                OperationShared& shared) {
  const int pixels = height * width, values = pixels * channels;
  const float ratio = parameters[0], complement = parameters[1];
  switch (static_cast<AugmentOperation>(operation)) {
    case AugmentOperation::ShearX:
    case AugmentOperation::ShearY:
    case AugmentOperation::TranslateX:
    case AugmentOperation::TranslateY:
    case AugmentOperation::Rotate: {
      const float half_width = __fmul_rn(0.5f, static_cast<float>(width));
      const float half_height = __fmul_rn(0.5f, static_cast<float>(height));
      for (int index = threadIdx.x; index < values; index += blockDim.x) {
        const int channel = index % channels, pixel = index / channels;
        const int x = pixel % width, y = pixel / width;
        const float u = __fsub_rn(__fadd_rn(static_cast<float>(x), 0.5f), half_width);
        const float v = __fsub_rn(__fadd_rn(static_cast<float>(y), 0.5f), half_height);
        const float column = rintf(
            __fadd_rn(__fadd_rn(__fmul_rn(parameters[0], u), __fmul_rn(parameters[1], v)), parameters[2]));
        const float row = rintf(
            __fadd_rn(__fadd_rn(__fmul_rn(parameters[3], u), __fmul_rn(parameters[4], v)), parameters[5]));
        const bool inside = column >= 0.0f && column < static_cast<float>(width) && row >= 0.0f &&
                            row < static_cast<float>(height);
        destination[index] =
            inside ? source[(static_cast<int>(row) * width + static_cast<int>(column)) * channels + channel]
                   : 0;
      }
      return;
    }
    case AugmentOperation::Brightness:
      for (int index = threadIdx.x; index < values; index += blockDim.x)
        destination[index] = blend(ratio, complement, static_cast<float>(source[index]), 0.0f);
      return;
    case AugmentOperation::Color:
      for (int index = threadIdx.x; index < values; index += blockDim.x) {
        if (channels != 3) {
          destination[index] = source[index];
          continue;
        }
        const float gray = static_cast<float>(grayscale(source + (index / 3) * 3));
        destination[index] = blend(ratio, complement, static_cast<float>(source[index]), gray);
      }
      return;
    case AugmentOperation::Contrast: {
      if (threadIdx.x == 0) shared.sum = 0;
      __syncthreads();
      unsigned long long partial = 0;
      const int count = channels == 3 ? pixels : values;
      for (int index = threadIdx.x; index < count; index += blockDim.x)
        partial += channels == 3 ? grayscale(source + index * 3) : source[index];
      atomicAdd(&shared.sum, partial);
      __syncthreads();
      const float mean = __fdiv_rn(__ull2float_rn(shared.sum), static_cast<float>(count));
      for (int index = threadIdx.x; index < values; index += blockDim.x)
        destination[index] = blend(ratio, complement, static_cast<float>(source[index]), mean);
      return;
    }
    case AugmentOperation::Sharpness: {
      const int row_values = width * channels;
      for (int index = threadIdx.x; index < values; index += blockDim.x) {
        if (height <= 2 || width <= 2) {
          destination[index] = source[index];
          continue;
        }
        const int pixel = index / channels, x = pixel % width, y = pixel / width;
        int degenerate = source[index];
        if (y > 0 && y < height - 1 && x > 0 && x < width - 1) {
          int sum = 4 * source[index];
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) sum += source[index + dy * row_values + dx * channels];
          degenerate = (2 * sum + 13) / 26;
        }
        destination[index] =
            blend(ratio, complement, static_cast<float>(source[index]), static_cast<float>(degenerate));
      }
      return;
    }
    case AugmentOperation::Posterize: {
      const auto mask = static_cast<Pixel>(0xFF00u >> static_cast<int>(parameters[0]));
      for (int index = threadIdx.x; index < values; index += blockDim.x)
        destination[index] = source[index] & mask;
      return;
    }
    case AugmentOperation::Solarize:
      for (int index = threadIdx.x; index < values; index += blockDim.x)
        destination[index] = static_cast<float>(source[index]) >= parameters[0]
                                 ? static_cast<Pixel>(255 - source[index])
                                 : source[index];
      return;
    case AugmentOperation::AutoContrast:
      for (int channel = 0; channel < channels; ++channel) {
        if (threadIdx.x == 0) shared.lowest = 255, shared.highest = 0;
        __syncthreads();
        for (int pixel = threadIdx.x; pixel < pixels; pixel += blockDim.x) {
          atomicMin(&shared.lowest, source[pixel * channels + channel]);
          atomicMax(&shared.highest, source[pixel * channels + channel]);
        }
        __syncthreads();
        float minimum = static_cast<float>(shared.lowest);
        float scale =
            __fmul_rn(__fdiv_rn(1.0f, __fsub_rn(static_cast<float>(shared.highest), minimum)), 255.0f);
        if (!isfinite(scale)) minimum = 0.0f, scale = 1.0f;
        for (int pixel = threadIdx.x; pixel < pixels; pixel += blockDim.x) {
          const int index = pixel * channels + channel;
          destination[index] =
              to_pixel(__fmul_rn(__fsub_rn(static_cast<float>(source[index]), minimum), scale));
        }
        __syncthreads();  // before the next channel resets the extremes
      }
      return;
    case AugmentOperation::Equalize:
      for (int channel = 0; channel < channels; ++channel) {
        shared.histogram[threadIdx.x] = 0;
        __syncthreads();
        for (int pixel = threadIdx.x; pixel < pixels; pixel += blockDim.x)
          atomicAdd(&shared.histogram[source[pixel * channels + channel]], 1);
        __syncthreads();
        if (threadIdx.x == 0) {
          long long total = 0, last_nonzero = 0;
          for (int value = 0; value < 256; ++value) {
            if (shared.histogram[value] == 0) continue;
            total += last_nonzero;
            last_nonzero = shared.histogram[value];
          }
          const long long step = total / 255;
          long long cumulative = 0;
          for (int value = 0; value < 256; ++value) {
            shared.table[value] = step == 0 ? static_cast<Pixel>(value)
                                            : static_cast<Pixel>(min((cumulative + step / 2) / step, 255LL));
            cumulative += shared.histogram[value];
          }
        }
        __syncthreads();
        for (int pixel = threadIdx.x; pixel < pixels; pixel += blockDim.x) {
          const int index = pixel * channels + channel;
          destination[index] = shared.table[source[index]];
        }
        __syncthreads();  // before the next channel resets the histogram
      }
      return;
    default:  // Identity
      for (int index = threadIdx.x; index < values; index += blockDim.x) destination[index] = source[index];
      return;
  }
}

// One block per image; `scratch` holds two images per sample.
template <typename Stored>
__global__ void __launch_bounds__(operation_threads)
    augment_operations_normalize_kernel(AugmentGeometry geometry, const std::uint8_t* images,
                                        const std::int32_t* draws, const float* mean,
                                        const float* standard_deviation, Stored* output, Pixel* scratch) {
  __shared__ OperationShared shared;
  const int height = geometry.height, width = geometry.width, channels = geometry.channels;
  const int values = height * width * channels;
  const std::int64_t sample = blockIdx.x;
  const std::int32_t* sample_draws = draws + augment_draw_words * sample;
  const Pixel* source = images + sample * values;
  Pixel* current = scratch + 2 * sample * values;
  Pixel* next = current + values;
  for (int index = threadIdx.x; index < values; index += blockDim.x) {
    const int channel = index % channels, pixel = index / channels;
    const int x = pixel % width, y = pixel / width;
    const int source_y = y + sample_draws[0];
    const int source_x = (sample_draws[2] != 0 ? width - 1 - x : x) + sample_draws[1];
    const bool inside = source_y >= 0 && source_y < height && source_x >= 0 && source_x < width;
    current[index] = inside ? source[(source_y * width + source_x) * channels + channel] : 0;
  }
  __syncthreads();
  for (int slot = 0; slot < max_augment_operations; ++slot) {
    const std::int32_t* words = sample_draws + 9 + 7 * slot;
    if (words[0] == static_cast<std::int32_t>(AugmentOperation::Identity)) continue;
    float parameters[6];
    for (int k = 0; k < 6; ++k) parameters[k] = __int_as_float(words[1 + k]);
    apply_operation(words[0], parameters, current, next, height, width, channels, shared);
    __syncthreads();
    Pixel* const swapped = current;
    current = next;
    next = swapped;
  }
  for (int index = threadIdx.x; index < values; index += blockDim.x) {
    const int channel = index % channels, pixel = index / channels;
    const int x = pixel % width, y = pixel / width;
    const bool cut = y >= sample_draws[3] && y < sample_draws[3] + geometry.cutout && x >= sample_draws[4] &&
                     x < sample_draws[4] + geometry.cutout;
    const bool erased = y >= sample_draws[5] && y < sample_draws[5] + sample_draws[7] &&
                        x >= sample_draws[6] && x < sample_draws[6] + sample_draws[8];
    const float value = cut || erased ? 0.0f : static_cast<float>(current[index]);
    output[sample * values + index] =
        narrow<Stored>((value / 255.0f - mean[channel]) / standard_deviation[channel]);
  }
}

}  // namespace

std::size_t augment_operations_scratch_bytes(const AugmentGeometry& geometry) {
  return geometry.operations ? 2 * static_cast<std::size_t>(geometry.batch) * geometry.height *
                                   geometry.width * geometry.channels
                             : 0;
}

void launch_augment_normalize_images(cudaStream_t stream, ComputePrecision storage,
                                     const AugmentGeometry& geometry, const std::uint8_t* images,
                                     const std::int32_t* draws, const float* mean,
                                     const float* standard_deviation, float* output, std::uint8_t* scratch) {
  const std::int64_t count =
      static_cast<std::int64_t>(geometry.batch) * geometry.height * geometry.width * geometry.channels;
  if (count <= 0) return;
  if (geometry.operations) {
    PHALANX_CHECK(scratch != nullptr, "augment kernel: auto-augment ops without scratch");
    with_stored_type(storage, [&](auto tag) {
      using Stored = StoredOf<decltype(tag)>;
      augment_operations_normalize_kernel<<<geometry.batch, operation_threads, 0, stream>>>(
          geometry, images, draws, mean, standard_deviation, stored<Stored>(output), scratch);
    });
    PHALANX_CUDA_LAUNCHED("augment_operations_normalize_kernel");
    return;
  }
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    augment_normalize_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
        geometry, images, draws, mean, standard_deviation, stored<Stored>(output), count);
  });
  PHALANX_CUDA_LAUNCHED("augment_normalize_kernel");
}

}  // namespace phalanx::backend::cuda
