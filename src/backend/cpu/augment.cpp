// Gathers each output pixel from where the crop and flip put it (zero outside the image, inside
// the cutout square or inside the erased rectangle) and normalises it with the formula of
// normalize_images, so the result is bit for bit data::augment_image followed by normalize_images
// (in fp32; bf16 rounds that value). With auto-augment ops, an image at a time: crop and flip into
// a uint8 copy, the ops of core/augment_operations.hpp, then cutout, erasing and normalisation.
#include "augment.hpp"

#include <bit>
#include <cstring>
#include <utility>
#include <vector>

#include "elementwise.hpp"
#include "phalanx/core/augment_operations.hpp"

namespace phalanx::backend::cpu {

namespace {

template <typename Element>
void augment_normalize_images_of(const AugmentGeometry& geometry, const std::uint8_t* __restrict images,
                                 const std::int32_t* draws, const float* mean,
                                 const float* standard_deviation, Element* __restrict output) {
  const int height = geometry.height, width = geometry.width, channels = geometry.channels;
  const std::int64_t row_elements = static_cast<std::int64_t>(width) * channels;
  const std::int64_t image_elements = row_elements * height;
  const std::int64_t rows = static_cast<std::int64_t>(geometry.batch) * height;
#pragma omp parallel for schedule(static) if (rows * row_elements >= parallel_threshold)
  for (std::int64_t image_row = 0; image_row < rows; ++image_row) {
    const std::int64_t sample = image_row / height;
    const int y = static_cast<int>(image_row % height);
    const std::int32_t* sample_draws = draws + augment_draw_words * sample;
    const int shift_y = sample_draws[0], shift_x = sample_draws[1];
    const bool flip = sample_draws[2] != 0;
    const int cutout_top = sample_draws[3], cutout_left = sample_draws[4];
    const int erase_top = sample_draws[5], erase_left = sample_draws[6];
    const int erase_height = sample_draws[7], erase_width = sample_draws[8];
    const bool row_in_cutout = y >= cutout_top && y < cutout_top + geometry.cutout;
    const bool row_erased = y >= erase_top && y < erase_top + erase_height;
    const int source_y = y + shift_y;
    const bool row_inside = source_y >= 0 && source_y < height;
    const std::uint8_t* source_image = images + sample * image_elements;
    Element* out_row = output + sample * image_elements + static_cast<std::int64_t>(y) * row_elements;
    for (int x = 0; x < width; ++x) {
      const int source_x = (flip ? width - 1 - x : x) + shift_x;
      const bool cut = (row_in_cutout && x >= cutout_left && x < cutout_left + geometry.cutout) ||
                       (row_erased && x >= erase_left && x < erase_left + erase_width);
      const bool inside = row_inside && !cut && source_x >= 0 && source_x < width;
      const std::uint8_t* pixel = inside ? source_image + static_cast<std::int64_t>(source_y) * row_elements +
                                               static_cast<std::int64_t>(source_x) * channels
                                         : nullptr;
      for (int channel = 0; channel < channels; ++channel) {
        const float value = pixel ? static_cast<float>(pixel[channel]) : 0.0f;
        narrow_into(out_row[static_cast<std::int64_t>(x) * channels + channel],
                    (value / 255.0f - mean[channel]) / standard_deviation[channel]);
      }
    }
  }
}

static_assert(sizeof(AugmentOperationDraw) == 7 * sizeof(std::int32_t) &&
                  augment_draw_words == 9 + 7 * max_augment_operations,
              "an auto-augment op travels as 7 words after the 9 of the crop, flip, cutout and erasing");

template <typename Element>
void augment_operations_normalize_of(const AugmentGeometry& geometry, const std::uint8_t* images,
                                     const std::int32_t* draws, const float* mean,
                                     const float* standard_deviation, Element* output) {
  const int height = geometry.height, width = geometry.width, channels = geometry.channels;
  const std::size_t image_elements = static_cast<std::size_t>(height) * width * channels;
#pragma omp parallel for schedule(static)
  for (int sample = 0; sample < geometry.batch; ++sample) {
    const std::int32_t* sample_draws = draws + static_cast<std::ptrdiff_t>(augment_draw_words) * sample;
    const int shift_y = sample_draws[0], shift_x = sample_draws[1];
    const bool flip = sample_draws[2] != 0;
    const std::uint8_t* source = images + image_elements * static_cast<std::size_t>(sample);
    std::vector<std::uint8_t> current(image_elements), next(image_elements);
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const int source_y = y + shift_y, source_x = (flip ? width - 1 - x : x) + shift_x;
        const bool inside = source_y >= 0 && source_y < height && source_x >= 0 && source_x < width;
        std::uint8_t* out = current.data() + (static_cast<std::size_t>(y) * width + x) * channels;
        if (inside)
          std::memcpy(out, source + (static_cast<std::size_t>(source_y) * width + source_x) * channels,
                      static_cast<std::size_t>(channels));
        else
          std::memset(out, 0, static_cast<std::size_t>(channels));
      }
    }
    for (int slot = 0; slot < max_augment_operations; ++slot) {
      const std::int32_t* words = sample_draws + 9 + 7 * slot;
      AugmentOperationDraw operation;
      operation.operation = words[0];
      for (int index = 0; index < 6; ++index)
        operation.parameters[index] = std::bit_cast<float>(words[1 + index]);
      if (operation.operation == static_cast<std::int32_t>(AugmentOperation::Identity)) continue;
      apply_augment_operation(operation, current.data(), next.data(), height, width, channels);
      std::swap(current, next);
    }
    const int cutout_top = sample_draws[3], cutout_left = sample_draws[4];
    const int erase_top = sample_draws[5], erase_left = sample_draws[6];
    const int erase_height = sample_draws[7], erase_width = sample_draws[8];
    Element* out_image = output + image_elements * static_cast<std::size_t>(sample);
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const bool cut = (y >= cutout_top && y < cutout_top + geometry.cutout && x >= cutout_left &&
                          x < cutout_left + geometry.cutout) ||
                         (y >= erase_top && y < erase_top + erase_height && x >= erase_left &&
                          x < erase_left + erase_width);
        const std::size_t pixel = (static_cast<std::size_t>(y) * width + x) * channels;
        for (int channel = 0; channel < channels; ++channel) {
          const float value = cut ? 0.0f : static_cast<float>(current[pixel + channel]);
          narrow_into(out_image[pixel + channel],
                      (value / 255.0f - mean[channel]) / standard_deviation[channel]);
        }
      }
    }
  }
}

}  // namespace

void augment_normalize_images(const AugmentGeometry& geometry, const std::uint8_t* images,
                              const std::int32_t* draws, const float* mean, const float* standard_deviation,
                              float* output) {
  if (geometry.operations)
    return augment_operations_normalize_of(geometry, images, draws, mean, standard_deviation, output);
  augment_normalize_images_of(geometry, images, draws, mean, standard_deviation, output);
}
void augment_normalize_images(const AugmentGeometry& geometry, const std::uint8_t* images,
                              const std::int32_t* draws, const float* mean, const float* standard_deviation,
                              Bf16* output) {
  if (geometry.operations)
    return augment_operations_normalize_of(geometry, images, draws, mean, standard_deviation, output);
  augment_normalize_images_of(geometry, images, draws, mean, standard_deviation, output);
}

}  // namespace phalanx::backend::cpu
