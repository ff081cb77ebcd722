// augment_image: crop with zero padding, horizontal flip and cutout for the Loader thread. The
// crop and flip are one gather (each output row reads one source row, mirrored or not), so an
// augmented sample costs about as much as the plain copy it replaces.
#include "phalanx/data/augmentation.hpp"

#include <algorithm>
#include <array>
#include <cstring>

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

}  // namespace

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
  return draws;
}

void augment_image(const AugmentOptions& options, std::uint64_t seed, std::int64_t epoch,
                   std::int64_t sample_index, const std::uint8_t* source, std::uint8_t* destination,
                   int height, int width, int channels) {
  PHALANX_CHECK(height > 0 && width > 0 && channels > 0, "image ", height, "x", width, "x", channels);
  const auto row_bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  const std::size_t image_bytes = row_bytes * static_cast<std::size_t>(height);
  const auto source_address = reinterpret_cast<std::uintptr_t>(source);
  const auto destination_address = reinterpret_cast<std::uintptr_t>(destination);
  PHALANX_CHECK(destination_address + image_bytes <= source_address ||
                    source_address + image_bytes <= destination_address,
                "augment_image source and destination overlap");
  if (!options.enabled()) {
    std::memcpy(destination, source, image_bytes);
    return;
  }
  const AugmentDraws draws = augment_draws(options, seed, epoch, sample_index, height, width);

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

  if (options.cutout > 0) {
    const std::int64_t side = options.cutout;
    const std::int64_t top = draws.cutout_top;
    const std::int64_t left = draws.cutout_left;
    const std::int64_t row_begin = std::clamp<std::int64_t>(top, 0, height);
    const std::int64_t row_end = std::clamp<std::int64_t>(top + side, 0, height);
    const std::int64_t cut_begin = std::clamp<std::int64_t>(left, 0, width);
    const std::int64_t cut_end = std::clamp<std::int64_t>(left + side, 0, width);
    for (std::int64_t y = row_begin; y < row_end; ++y) {
      std::memset(destination + static_cast<std::size_t>(y) * row_bytes +
                      static_cast<std::size_t>(cut_begin) * pixel_bytes,
                  0, static_cast<std::size_t>(cut_end - cut_begin) * pixel_bytes);
    }
  }
}

}  // namespace phalanx::data
