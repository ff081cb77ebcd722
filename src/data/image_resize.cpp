// Resizing for the image-folder importer: separable resampling with a triangle kernel whose
// support grows with the reduction factor. Shrinking 500x375 photos to 32x32 then averages every
// source pixel (no aliasing), and enlarging is plain bilinear interpolation.
#include <algorithm>
#include <cmath>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/data/image_folder.hpp"

namespace phalanx::data {
namespace {

// For each output position: the first contributing input index and the normalised weights.
struct Taps {
  std::vector<int> first;
  std::vector<std::vector<float>> weights;
};

Taps triangle_taps(int input_size, int output_size) {
  const double scale = static_cast<double>(input_size) / output_size;
  const double support = std::max(1.0, scale);  // kernel half-width in input pixels
  Taps taps;
  taps.first.resize(static_cast<std::size_t>(output_size));
  taps.weights.resize(static_cast<std::size_t>(output_size));
  for (int output = 0; output < output_size; ++output) {
    const double centre = (output + 0.5) * scale;  // pixel centres, not corners
    const int begin = std::max(0, static_cast<int>(std::floor(centre - support)));
    const int end = std::min(input_size, static_cast<int>(std::ceil(centre + support)));
    std::vector<float> weights;
    double total = 0;
    for (int input = begin; input < end; ++input) {
      const double distance = std::abs((input + 0.5 - centre) / support);
      const double weight = distance < 1.0 ? 1.0 - distance : 0.0;
      weights.push_back(static_cast<float>(weight));
      total += weight;
    }
    for (float& weight : weights) weight = static_cast<float>(weight / total);
    taps.first[static_cast<std::size_t>(output)] = begin;
    taps.weights[static_cast<std::size_t>(output)] = std::move(weights);
  }
  return taps;
}

}  // namespace

DecodedImage resize_image(const DecodedImage& image, int height, int width) {
  PHALANX_CHECK(height >= 1 && width >= 1 && image.height >= 1 && image.width >= 1, "resize ", image.height,
                "x", image.width, " to ", height, "x", width);
  if (image.height == height && image.width == width) return image;
  const int channels = image.channels;
  const Taps horizontal = triangle_taps(image.width, width), vertical = triangle_taps(image.height, height);
  // Rows first into floats, then columns; rounding happens once, at the end.
  std::vector<float> rows(static_cast<std::size_t>(image.height) * width * channels);
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < width; ++x)
      for (int channel = 0; channel < channels; ++channel) {
        const auto& weights = horizontal.weights[static_cast<std::size_t>(x)];
        const int first = horizontal.first[static_cast<std::size_t>(x)];
        float sum = 0;
        for (std::size_t tap = 0; tap < weights.size(); ++tap)
          sum += weights[tap] *
                 image.pixels[(static_cast<std::size_t>(y) * image.width + first + tap) * channels + channel];
        rows[(static_cast<std::size_t>(y) * width + x) * channels + channel] = sum;
      }
  DecodedImage resized;
  resized.height = height;
  resized.width = width;
  resized.channels = channels;
  resized.pixels.resize(static_cast<std::size_t>(height) * width * channels);
  for (int y = 0; y < height; ++y) {
    const auto& weights = vertical.weights[static_cast<std::size_t>(y)];
    const int first = vertical.first[static_cast<std::size_t>(y)];
    for (int x = 0; x < width; ++x)
      for (int channel = 0; channel < channels; ++channel) {
        float sum = 0;
        for (std::size_t tap = 0; tap < weights.size(); ++tap)
          sum +=
              weights[tap] * rows[((first + tap) * static_cast<std::size_t>(width) + x) * channels + channel];
        resized.pixels[(static_cast<std::size_t>(y) * width + x) * channels + channel] =
            static_cast<std::uint8_t>(std::clamp(std::lround(sum), 0L, 255L));
      }
  }
  return resized;
}

}  // namespace phalanx::data
