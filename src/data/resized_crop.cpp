// resample_bilinear and the windows of RandomResizedCrop and Resize + CenterCrop. The source
// index and weights of each output row and column are exact fractions with denominator
// 2 * resized size, so the whole interpolation is integer arithmetic (core/bilinear_taps.hpp) that
// the backends' resample_images repeat exactly.
#include "phalanx/data/resized_crop.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "phalanx/core/bilinear_taps.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::data {
namespace {

std::int64_t below(std::uint32_t word, std::int64_t bound) {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(word) * static_cast<std::uint64_t>(bound)) >>
                                   32);
}

double uniform(std::uint32_t word) {
  return static_cast<double>(word) * 0x1p-32;
}

}  // namespace

void resample_bilinear(const ResampleWindow& window, const std::uint8_t* source, int source_height,
                       int source_width, int channels, std::uint8_t* destination, int output_height,
                       int output_width) {
  PHALANX_CHECK(
      source_height > 0 && source_width > 0 && channels > 0 && output_height > 0 && output_width > 0,
      "resample ", source_height, "x", source_width, "x", channels, " to ", output_height, "x", output_width);
  PHALANX_CHECK(window.height > 0 && window.width > 0 && window.top >= 0 && window.left >= 0 &&
                    window.top + window.height <= source_height && window.left + window.width <= source_width,
                "resample box ", window.top, ",", window.left, " ", window.height, "x", window.width,
                " outside the ", source_height, "x", source_width, " image");
  PHALANX_CHECK(window.offset_y >= 0 && window.offset_x >= 0 &&
                    window.offset_y + output_height <= window.resized_height &&
                    window.offset_x + output_width <= window.resized_width,
                "resample output ", output_height, "x", output_width, " at ", window.offset_y, ",",
                window.offset_x, " outside the resized ", window.resized_height, "x", window.resized_width);
  const std::int64_t row_denominator = 2 * std::int64_t{window.resized_height};
  const std::int64_t column_denominator = 2 * std::int64_t{window.resized_width};
  std::vector<BilinearTap> columns(static_cast<std::size_t>(output_width));
  for (int x = 0; x < output_width; ++x)
    columns[static_cast<std::size_t>(x)] =
        bilinear_tap(x + window.offset_x, window.left, window.width, window.resized_width);
  const auto source_row_bytes = static_cast<std::int64_t>(source_width) * channels;
  for (int y = 0; y < output_height; ++y) {
    const BilinearTap row =
        bilinear_tap(y + window.offset_y, window.top, window.height, window.resized_height);
    std::uint8_t* out = destination + static_cast<std::int64_t>(y) * output_width * channels;
    for (int x = 0; x < output_width; ++x)
      for (int channel = 0; channel < channels; ++channel)
        out[static_cast<std::int64_t>(x) * channels + channel] =
            bilinear_value(source, source_row_bytes, channels, channel, row,
                           columns[static_cast<std::size_t>(x)], row_denominator, column_denominator);
  }
}

ResampleWindow random_resized_crop_window(const ResizedCropRanges& ranges, std::uint64_t seed,
                                          std::int64_t epoch, std::int64_t sample_index, int source_height,
                                          int source_width, int output_height, int output_width) {
  PHALANX_CHECK(source_height > 0 && source_width > 0 && output_height > 0 && output_width > 0,
                "resized crop ", source_height, "x", source_width, " to ", output_height, "x", output_width);
  PHALANX_CHECK(ranges.scale_min > 0.0 && ranges.scale_min <= ranges.scale_max && ranges.scale_max <= 1.0 &&
                    ranges.ratio_min > 0.0 && ranges.ratio_min <= ranges.ratio_max,
                "resized crop scale [", ranges.scale_min, ", ", ranges.scale_max, "] ratio [",
                ranges.ratio_min, ", ", ranges.ratio_max, "]");
  static const std::uint64_t crop_stream = fnv1a_hash("random_resized_crop");
  const std::uint64_t stream = mix_seed(mix_seed(crop_stream, static_cast<std::uint64_t>(epoch)),
                                        static_cast<std::uint64_t>(sample_index));
  ResampleWindow window;
  window.resized_height = output_height;
  window.resized_width = output_width;
  const double area = static_cast<double>(source_height) * static_cast<double>(source_width);
  const double log_ratio_min = std::log(ranges.ratio_min), log_ratio_max = std::log(ranges.ratio_max);
  for (std::uint64_t attempt = 0; attempt < 10; ++attempt) {
    const std::array<std::uint32_t, 4> words = philox4x32(seed, stream, attempt);
    const double target_area =
        area * (ranges.scale_min + (ranges.scale_max - ranges.scale_min) * uniform(words[0]));
    const double ratio = std::exp(log_ratio_min + (log_ratio_max - log_ratio_min) * uniform(words[1]));
    // nearbyint in the default rounding mode rounds half to even, as Python's round().
    const double width = std::nearbyint(std::sqrt(target_area * ratio));
    const double height = std::nearbyint(std::sqrt(target_area / ratio));
    if (!(width > 0 && width <= source_width && height > 0 && height <= source_height)) continue;
    window.height = static_cast<std::int32_t>(height);
    window.width = static_cast<std::int32_t>(width);
    window.top = static_cast<std::int32_t>(below(words[2], source_height - window.height + 1));
    window.left = static_cast<std::int32_t>(below(words[3], source_width - window.width + 1));
    return window;
  }
  // torchvision's fallback: the central crop of the ratio range's nearer end, or the whole image.
  const double image_ratio = static_cast<double>(source_width) / static_cast<double>(source_height);
  window.height = source_height;
  window.width = source_width;
  if (image_ratio < ranges.ratio_min) {
    window.height = static_cast<std::int32_t>(std::nearbyint(source_width / ranges.ratio_min));
  } else if (image_ratio > ranges.ratio_max) {
    window.width = static_cast<std::int32_t>(std::nearbyint(source_height * ranges.ratio_max));
  }
  window.top = (source_height - window.height) / 2;
  window.left = (source_width - window.width) / 2;
  return window;
}

ResampleWindow center_crop_window(int source_height, int source_width, int resize, int output_height,
                                  int output_width) {
  PHALANX_CHECK(source_height > 0 && source_width > 0 && resize > 0 && output_height > 0 && output_width > 0,
                "center crop ", source_height, "x", source_width, " resized to ", resize, " to ",
                output_height, "x", output_width);
  ResampleWindow window;
  window.height = source_height;
  window.width = source_width;
  // torchvision's Resize(int): the shorter side becomes `resize`, the longer int(resize * long / short).
  if (source_height <= source_width) {
    window.resized_height = resize;
    window.resized_width = static_cast<std::int32_t>(std::int64_t{resize} * source_width / source_height);
  } else {
    window.resized_width = resize;
    window.resized_height = static_cast<std::int32_t>(std::int64_t{resize} * source_height / source_width);
  }
  PHALANX_CHECK(window.resized_height >= output_height && window.resized_width >= output_width,
                "center crop ", output_height, "x", output_width, " larger than the resized ",
                window.resized_height, "x", window.resized_width);
  // CenterCrop: int(round((resized - output) / 2.0)), halves to even.
  window.offset_y = static_cast<std::int32_t>(std::nearbyint((window.resized_height - output_height) / 2.0));
  window.offset_x = static_cast<std::int32_t>(std::nearbyint((window.resized_width - output_width) / 2.0));
  return window;
}

}  // namespace phalanx::data
