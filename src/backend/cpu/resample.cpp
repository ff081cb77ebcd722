// Bilinear resampling of a batch by per-image windows (see resample.hpp), with the integer taps of
// core/bilinear_taps.hpp, one image per OpenMP iteration.
#include "resample.hpp"

#include "phalanx/core/bilinear_taps.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend::cpu {

void resample_images(const ResampleGeometry& geometry, const std::uint8_t* images,
                     const std::int32_t* windows, std::uint8_t* output) {
  const int channels = geometry.channels;
  const std::int64_t source_bytes = std::int64_t{geometry.source_height} * geometry.source_width * channels;
  const std::int64_t output_bytes = std::int64_t{geometry.output_height} * geometry.output_width * channels;
  const std::int64_t row_bytes = std::int64_t{geometry.source_width} * channels;
  for (int image = 0; image < geometry.batch; ++image) {
    const std::int32_t* window = windows + std::int64_t{image} * resample_window_words;
    const std::int32_t top = window[0], left = window[1], height = window[2], width = window[3];
    const std::int32_t resized_height = window[4], resized_width = window[5];
    const std::int32_t offset_y = window[6], offset_x = window[7];
    PHALANX_CHECK(height > 0 && width > 0 && top >= 0 && left >= 0 &&
                      top + height <= geometry.source_height && left + width <= geometry.source_width &&
                      offset_y >= 0 && offset_x >= 0 && offset_y + geometry.output_height <= resized_height &&
                      offset_x + geometry.output_width <= resized_width,
                  "resample window of image ", image, " (", top, ",", left, " ", height, "x", width, " to ",
                  resized_height, "x", resized_width, ") does not fit its ", geometry.source_height, "x",
                  geometry.source_width, " image");
  }
#pragma omp parallel for schedule(static)
  for (int image = 0; image < geometry.batch; ++image) {
    const std::int32_t* window = windows + std::int64_t{image} * resample_window_words;
    const std::int64_t row_denominator = 2 * std::int64_t{window[4]};
    const std::int64_t column_denominator = 2 * std::int64_t{window[5]};
    const std::uint8_t* source = images + image * source_bytes;
    std::uint8_t* destination = output + image * output_bytes;
    for (int y = 0; y < geometry.output_height; ++y) {
      const BilinearTap row = bilinear_tap(y + window[6], window[0], window[2], window[4]);
      for (int x = 0; x < geometry.output_width; ++x) {
        const BilinearTap column = bilinear_tap(x + window[7], window[1], window[3], window[5]);
        for (int channel = 0; channel < channels; ++channel)
          destination[(std::int64_t{y} * geometry.output_width + x) * channels + channel] = bilinear_value(
              source, row_bytes, channels, channel, row, column, row_denominator, column_denominator);
      }
    }
  }
}

}  // namespace phalanx::backend::cpu
