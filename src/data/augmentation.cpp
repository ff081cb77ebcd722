// augment_image: crop with zero padding, horizontal flip, the auto-augment ops, cutout and random
// erasing for the Loader thread. The crop and flip are one gather (each output row reads one source row,
// mirrored or not), so an augmented sample costs about as much as the plain copy it replaces.
#include "phalanx/data/augmentation.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::data {
namespace {

// Multiply-shift instead of rejection sampling: a fixed number of draws per sample, which a GPU
// thread can reproduce without a loop. The bias (< n / 2^32) is irrelevant for image sizes.
std::int64_t below(std::uint32_t word, std::int64_t bound) {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(word) * static_cast<std::uint64_t>(bound)) >>
                                   32);
}

// A word as a double uniform in [0, 1) (every 32-bit word is exact in a double).
double uniform(std::uint32_t word) {
  return static_cast<double>(word) * 0x1p-32;
}

// Zeroes rows [top, top + rows) x columns [left, left + columns), clipped to the image.
void zero_rectangle(std::uint8_t* image, int height, int width, int channels, std::int64_t top,
                    std::int64_t left, std::int64_t rows, std::int64_t columns) {
  const auto pixel_bytes = static_cast<std::size_t>(channels);
  const auto row_bytes = static_cast<std::size_t>(width) * pixel_bytes;
  const std::int64_t row_begin = std::clamp<std::int64_t>(top, 0, height);
  const std::int64_t row_end = std::clamp<std::int64_t>(top + rows, 0, height);
  const std::int64_t column_begin = std::clamp<std::int64_t>(left, 0, width);
  const std::int64_t column_end = std::clamp<std::int64_t>(left + columns, 0, width);
  if (column_begin >= column_end) return;
  for (std::int64_t y = row_begin; y < row_end; ++y) {
    std::memset(image + static_cast<std::size_t>(y) * row_bytes +
                    static_cast<std::size_t>(column_begin) * pixel_bytes,
                0, static_cast<std::size_t>(column_end - column_begin) * pixel_bytes);
  }
}

// The auto-augment ops in place: each op writes a scratch copy, which becomes the image.
void apply_operations(const AugmentOperationDraw (&operations)[max_augment_operations], std::uint8_t* image,
                      int height, int width, int channels) {
  thread_local std::vector<std::uint8_t> scratch;
  const std::size_t bytes =
      static_cast<std::size_t>(height) * static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  for (const AugmentOperationDraw& operation : operations) {
    if (operation.operation == static_cast<std::int32_t>(AugmentOperation::Identity)) continue;
    scratch.resize(bytes);
    apply_augment_operation(operation, image, scratch.data(), height, width, channels);
    std::memcpy(image, scratch.data(), bytes);
  }
}

}  // namespace

EraseRectangle erase_draws(const RandomErasingOptions& options, std::uint64_t seed, std::int64_t epoch,
                           std::int64_t sample_index, int height, int width) {
  PHALANX_CHECK(height > 0 && width > 0, "image ", height, "x", width);
  EraseRectangle rectangle;
  if (!options.enabled()) return rectangle;
  PHALANX_CHECK(options.probability <= 1.0 && options.scale_min > 0.0 &&
                    options.scale_min <= options.scale_max && options.scale_max <= 1.0 &&
                    options.ratio_min > 0.0 && options.ratio_min <= options.ratio_max,
                "random erasing p ", options.probability, " scale [", options.scale_min, ", ",
                options.scale_max, "] ratio [", options.ratio_min, ", ", options.ratio_max, "]");
  static const std::uint64_t erasing_stream = fnv1a_hash("random_erasing");
  const std::uint64_t stream = mix_seed(mix_seed(erasing_stream, static_cast<std::uint64_t>(epoch)),
                                        static_cast<std::uint64_t>(sample_index));
  if (!(uniform(philox4x32(seed, stream, 0)[0]) < options.probability)) return rectangle;
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_ratio_min = std::log(options.ratio_min), log_ratio_max = std::log(options.ratio_max);
  for (std::uint64_t attempt = 0; attempt < 10; ++attempt) {
    const std::array<std::uint32_t, 4> words = philox4x32(seed, stream, 1 + attempt);
    const double erase_area =
        area * (options.scale_min + (options.scale_max - options.scale_min) * uniform(words[0]));
    const double ratio = std::exp(log_ratio_min + (log_ratio_max - log_ratio_min) * uniform(words[1]));
    // nearbyint in the default rounding mode rounds half to even, as Python's round().
    const double rows = std::nearbyint(std::sqrt(erase_area * ratio));
    const double columns = std::nearbyint(std::sqrt(erase_area / ratio));
    if (!(rows < height && columns < width)) continue;
    rectangle.height = static_cast<std::int32_t>(rows);
    rectangle.width = static_cast<std::int32_t>(columns);
    rectangle.top = static_cast<std::int32_t>(below(words[2], height - rectangle.height + 1));
    rectangle.left = static_cast<std::int32_t>(below(words[3], width - rectangle.width + 1));
    return rectangle;
  }
  return rectangle;
}

AugmentDraws augment_draws(const AugmentOptions& options, std::uint64_t seed, std::int64_t epoch,
                           std::int64_t sample_index, int height, int width) {
  PHALANX_CHECK(height > 0 && width > 0, "image ", height, "x", width);
  PHALANX_CHECK(options.random_crop_padding >= 0 && options.cutout >= 0, "augment padding ",
                options.random_crop_padding, " cutout ", options.cutout);
  static const std::uint64_t augment_stream = fnv1a_hash("augment");
  const std::uint64_t stream = mix_seed(mix_seed(augment_stream, static_cast<std::uint64_t>(epoch)),
                                        static_cast<std::uint64_t>(sample_index));
  const std::array<std::uint32_t, 4> first = philox4x32(seed, stream, 0);
  const std::array<std::uint32_t, 4> second = philox4x32(seed, stream, 1);
  const std::int64_t padding = options.random_crop_padding;
  const std::int64_t half_side = options.cutout / 2;
  AugmentDraws draws;
  draws.shift_y = static_cast<std::int32_t>(below(first[0], 2 * padding + 1) - padding);
  draws.shift_x = static_cast<std::int32_t>(below(first[1], 2 * padding + 1) - padding);
  draws.flip = options.horizontal_flip && (first[2] >> 31) != 0 ? 1 : 0;
  draws.cutout_top = static_cast<std::int32_t>(below(first[3], height) - half_side);
  draws.cutout_left = static_cast<std::int32_t>(below(second[0], width) - half_side);
  const EraseRectangle erase = erase_draws(options.random_erasing, seed, epoch, sample_index, height, width);
  draws.erase_top = erase.top;
  draws.erase_left = erase.left;
  draws.erase_height = erase.height;
  draws.erase_width = erase.width;
  auto_augment_draws(options.auto_augment, seed, epoch, sample_index, height, width, draws.operations);
  return draws;
}

void augment_image(const AugmentOptions& options, std::uint64_t seed, std::int64_t epoch,
                   std::int64_t sample_index, const std::uint8_t* source, std::uint8_t* destination,
                   int height, int width, int channels) {
  // Off: the no-op draws, i.e. a row by row copy.
  if (!options.enabled())
    return apply_augment_draws(AugmentDraws{}, 0, source, destination, height, width, channels);
  apply_augment_draws(augment_draws(options, seed, epoch, sample_index, height, width), options.cutout,
                      source, destination, height, width, channels);
}

void apply_augment_draws(const AugmentDraws& draws, int cutout, const std::uint8_t* source,
                         std::uint8_t* destination, int height, int width, int channels) {
  PHALANX_CHECK(height > 0 && width > 0 && channels > 0, "image ", height, "x", width, "x", channels);
  PHALANX_CHECK(cutout >= 0, "cutout ", cutout);
  const auto row_bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  const std::size_t image_bytes = row_bytes * static_cast<std::size_t>(height);
  const auto source_address = reinterpret_cast<std::uintptr_t>(source);
  const auto destination_address = reinterpret_cast<std::uintptr_t>(destination);
  PHALANX_CHECK(destination_address + image_bytes <= source_address ||
                    source_address + image_bytes <= destination_address,
                "augment_image source and destination overlap");

  // Crop offsets relative to the unpadded image: output(y, x) = source(y + shift_y, x + shift_x).
  const std::int64_t shift_y = draws.shift_y;
  const std::int64_t shift_x = draws.shift_x;
  const bool flip = draws.flip != 0;

  // Output columns [column_begin, column_end) read source columns that exist; the rest are zero.
  // Flipping reverses which output columns those are, so compute the span before mirroring.
  const std::int64_t column_begin = std::clamp<std::int64_t>(-shift_x, 0, width);
  const std::int64_t column_end = std::clamp<std::int64_t>(width - shift_x, 0, width);
  const auto pixel_bytes = static_cast<std::size_t>(channels);
  for (std::int64_t y = 0; y < height; ++y) {
    std::uint8_t* out_row = destination + static_cast<std::size_t>(y) * row_bytes;
    const std::int64_t source_y = y + shift_y;
    if (source_y < 0 || source_y >= height || column_begin >= column_end) {
      std::memset(out_row, 0, row_bytes);
      continue;
    }
    const std::uint8_t* in_row = source + static_cast<std::size_t>(source_y) * row_bytes;
    if (!flip) {
      std::memset(out_row, 0, static_cast<std::size_t>(column_begin) * pixel_bytes);
      std::memcpy(out_row + static_cast<std::size_t>(column_begin) * pixel_bytes,
                  in_row + static_cast<std::size_t>(column_begin + shift_x) * pixel_bytes,
                  static_cast<std::size_t>(column_end - column_begin) * pixel_bytes);
      std::memset(out_row + static_cast<std::size_t>(column_end) * pixel_bytes, 0,
                  static_cast<std::size_t>(width - column_end) * pixel_bytes);
      continue;
    }
    // Flipped: output column x takes cropped column width - 1 - x, so the columns with source
    // content are [width - column_end, width - column_begin), read right to left.
    const std::int64_t flipped_begin = width - column_end, flipped_end = width - column_begin;
    std::memset(out_row, 0, static_cast<std::size_t>(flipped_begin) * pixel_bytes);
    const std::uint8_t* span_begin = in_row + static_cast<std::size_t>(column_begin + shift_x) * pixel_bytes;
    std::uint8_t* out_span = out_row + static_cast<std::size_t>(flipped_begin) * pixel_bytes;
    const auto span_pixels = static_cast<std::size_t>(flipped_end - flipped_begin);
    if (pixel_bytes == 1) {
      std::reverse_copy(span_begin, span_begin + span_pixels, out_span);  // grayscale: bytes reversed
    } else {
      for (std::size_t pixel = 0; pixel < span_pixels; ++pixel)
        std::memcpy(out_span + pixel * pixel_bytes, span_begin + (span_pixels - 1 - pixel) * pixel_bytes,
                    pixel_bytes);
    }
    std::memset(out_row + static_cast<std::size_t>(flipped_end) * pixel_bytes, 0,
                static_cast<std::size_t>(width - flipped_end) * pixel_bytes);
  }

  apply_operations(draws.operations, destination, height, width, channels);
  if (cutout > 0) {
    zero_rectangle(destination, height, width, channels, draws.cutout_top, draws.cutout_left, cutout, cutout);
  }
  if (draws.erase_height > 0 && draws.erase_width > 0) {
    zero_rectangle(destination, height, width, channels, draws.erase_top, draws.erase_left,
                   draws.erase_height, draws.erase_width);
  }
}

}  // namespace phalanx::data
