// Resizing for the image-folder importer: separable resampling with a triangle kernel whose
// support grows with the reduction factor. Shrinking 500x375 photos to 32x32 then averages every
// source pixel (no aliasing), and enlarging is plain bilinear interpolation.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/data/image_folder.hpp"

namespace phalanx::data {
namespace {

// Each weight is rounded to float, then divided by the (double) total and rounded again: the
// arithmetic the stored files were made with, kept so the bytes stay the same.
void triangle_taps(int input_size, int output_size, ResizeTaps& taps) {
  const double scale = static_cast<double>(input_size) / output_size;
  const double support = std::max(1.0, scale);  // kernel half-width in input pixels
  taps.first.resize(static_cast<std::size_t>(output_size));
  taps.offsets.resize(static_cast<std::size_t>(output_size) + 1);
  taps.weights.clear();
  taps.offsets[0] = 0;
  for (int output = 0; output < output_size; ++output) {
    const double centre = (output + 0.5) * scale;  // pixel centres, not corners
    const int begin = std::max(0, static_cast<int>(std::floor(centre - support)));
    const int end = std::min(input_size, static_cast<int>(std::ceil(centre + support)));
    const std::size_t start = taps.weights.size();
    double total = 0;
    for (int input = begin; input < end; ++input) {
      const double distance = std::abs((input + 0.5 - centre) / support);
      const double weight = distance < 1.0 ? 1.0 - distance : 0.0;
      taps.weights.push_back(static_cast<float>(weight));
      total += weight;
    }
    for (std::size_t index = start; index < taps.weights.size(); ++index)
      taps.weights[index] = static_cast<float>(taps.weights[index] / total);
    taps.first[static_cast<std::size_t>(output)] = begin;
    taps.offsets[static_cast<std::size_t>(output) + 1] = static_cast<int>(taps.weights.size());
  }
}

// The horizontal pass into `rows` (image.height x width x channels floats). Each output sums its
// taps in a register, all channels of a tap together; `Channels` fixes the count at compile time
// for RGB and grey (0: the image's own count).
template <int Channels>
void horizontal_pass(const DecodedImage& image, const ResizeTaps& horizontal, int width, float* rows) {
  const auto channels = static_cast<std::size_t>(Channels > 0 ? Channels : image.channels);
  constexpr std::size_t most_channels = 4;
  PHALANX_CHECK(channels <= most_channels, "resize of ", channels, " channels");
  for (int y = 0; y < image.height; ++y) {
    const std::uint8_t* source = image.pixels.data() + static_cast<std::size_t>(y) * image.width * channels;
    float* destination = rows + static_cast<std::size_t>(y) * width * channels;
    for (int x = 0; x < width; ++x) {
      const auto position = static_cast<std::size_t>(x);
      const float* weights = horizontal.weights.data() + horizontal.offsets[position];
      const auto taps =
          static_cast<std::size_t>(horizontal.offsets[position + 1] - horizontal.offsets[position]);
      const std::uint8_t* input = source + static_cast<std::size_t>(horizontal.first[position]) * channels;
      float sums[most_channels] = {};
      for (std::size_t tap = 0; tap < taps; ++tap) {
        const float weight = weights[tap];
        for (std::size_t channel = 0; channel < channels; ++channel)
          sums[channel] += weight * input[tap * channels + channel];
      }
      std::copy(sums, sums + channels, destination + position * channels);
    }
  }
}

}  // namespace

void resize_image(const DecodedImage& image, int height, int width, DecodedImage& into,
                  ImageScratch& scratch) {
  PHALANX_CHECK(height >= 1 && width >= 1 && image.height >= 1 && image.width >= 1, "resize ", image.height,
                "x", image.width, " to ", height, "x", width);
  PHALANX_CHECK(&image != &into, "resize into its own image");
  if (image.height == height && image.width == width) {
    into.height = height;
    into.width = width;
    into.channels = image.channels;
    into.pixels.assign(image.pixels.begin(), image.pixels.end());
    return;
  }
  const int channels = image.channels;
  triangle_taps(image.width, width, scratch.horizontal);
  triangle_taps(image.height, height, scratch.vertical);
  // Rows first into floats, then columns; rounding happens once, at the end. The loops run over
  // contiguous memory (all channels of a tap; whole rows per vertical tap), but every output still
  // adds its taps in tap order, so the bytes are those of the formula taken value by value.
  const std::size_t row_values = static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  scratch.rows.resize(static_cast<std::size_t>(image.height) * row_values);
  if (channels == 3)
    horizontal_pass<3>(image, scratch.horizontal, width, scratch.rows.data());
  else if (channels == 1)
    horizontal_pass<1>(image, scratch.horizontal, width, scratch.rows.data());
  else
    horizontal_pass<0>(image, scratch.horizontal, width, scratch.rows.data());
  into.height = height;
  into.width = width;
  into.channels = channels;
  into.pixels.resize(static_cast<std::size_t>(height) * row_values);
  std::vector<float>& sums = scratch.sums;
  sums.resize(row_values);
  const ResizeTaps& vertical = scratch.vertical;
  for (int y = 0; y < height; ++y) {
    const auto position = static_cast<std::size_t>(y);
    const auto first = static_cast<std::size_t>(vertical.first[position]);
    const float* weights = vertical.weights.data() + vertical.offsets[position];
    const auto taps = static_cast<std::size_t>(vertical.offsets[position + 1] - vertical.offsets[position]);
    std::fill(sums.begin(), sums.end(), 0.0f);
    for (std::size_t tap = 0; tap < taps; ++tap) {
      const float weight = weights[tap];
      const float* row = scratch.rows.data() + (first + tap) * row_values;
      for (std::size_t index = 0; index < row_values; ++index) sums[index] += weight * row[index];
    }
    // Sums are never negative (weights and pixels are not), so floor(x + 0.5), exact in double,
    // is std::lround's half-away-from-zero without its per-value call.
    std::uint8_t* output = into.pixels.data() + position * row_values;
    for (std::size_t index = 0; index < row_values; ++index)
      output[index] =
          static_cast<std::uint8_t>(std::min(255.0, std::floor(static_cast<double>(sums[index]) + 0.5)));
  }
}

DecodedImage resize_image(const DecodedImage& image, int height, int width) {
  PHALANX_CHECK(height >= 1 && width >= 1 && image.height >= 1 && image.width >= 1, "resize ", image.height,
                "x", image.width, " to ", height, "x", width);
  if (image.height == height && image.width == width) return image;
  DecodedImage resized;
  ImageScratch scratch;
  resize_image(image, height, width, resized, scratch);
  return resized;
}

}  // namespace phalanx::data
