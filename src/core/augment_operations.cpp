// apply_augment_operation: torchvision's functional ops on uint8 tensors, written out in the
// float arithmetic they perform (one rounding per product and per sum, in torchvision's order),
// so the CUDA port in backend/cuda/augment.cu can repeat it bit for bit. Each product and sum is
// its own statement: a compiler may fuse a * b + c within one expression into an FMA.
#include "phalanx/core/augment_operations.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "phalanx/core/error.hpp"

namespace phalanx {
namespace {

using Pixel = std::uint8_t;

// _blend's cast back: the float result clamped to [0, 255] and truncated (Tensor.to(uint8)).
Pixel to_pixel(float value) {
  return static_cast<Pixel>(static_cast<int>(std::min(std::max(value, 0.0f), 255.0f)));
}

// ratio * img1 + (1 - ratio) * img2: three tensor ops, three roundings.
Pixel blend(float ratio, float complement, float image, float degenerate) {
  const float kept = ratio * image;
  const float mixed = complement * degenerate;
  const float sum = kept + mixed;
  return to_pixel(sum);
}

// rgb_to_grayscale: (0.2989 r + 0.587 g + 0.114 b), left to right, truncated to uint8.
Pixel grayscale(const Pixel* pixel) {
  const float red = 0.2989f * static_cast<float>(pixel[0]);
  const float green = 0.587f * static_cast<float>(pixel[1]);
  const float blue = 0.114f * static_cast<float>(pixel[2]);
  const float red_green = red + green;
  const float sum = red_green + blue;
  return static_cast<Pixel>(static_cast<int>(sum));
}

void affine(const float* parameters, const Pixel* source, Pixel* destination, int height, int width,
            int channels) {
  const float half_width = 0.5f * static_cast<float>(width), half_height = 0.5f * static_cast<float>(height);
  for (int y = 0; y < height; ++y) {
    const float v = (static_cast<float>(y) + 0.5f) - half_height;
    const float column_v = parameters[1] * v, row_v = parameters[4] * v;
    for (int x = 0; x < width; ++x) {
      const float u = (static_cast<float>(x) + 0.5f) - half_width;
      const float column_u = parameters[0] * u, row_u = parameters[3] * u;
      const float column_sum = column_u + column_v, row_sum = row_u + row_v;
      const float column = std::nearbyint(column_sum + parameters[2]);
      const float row = std::nearbyint(row_sum + parameters[5]);
      Pixel* out = destination + (static_cast<std::size_t>(y) * width + x) * channels;
      if (column >= 0.0f && column < static_cast<float>(width) && row >= 0.0f &&
          row < static_cast<float>(height)) {
        std::memcpy(
            out,
            source + (static_cast<std::size_t>(row) * width + static_cast<std::size_t>(column)) * channels,
            static_cast<std::size_t>(channels));
      } else {
        std::memset(out, 0, static_cast<std::size_t>(channels));
      }
    }
  }
}

// torchvision's _scale_channel: the PIL equalisation lookup table of one channel's histogram.
void equalize_channel(const Pixel* source, Pixel* destination, std::size_t pixels, int channels) {
  std::array<std::int64_t, 256> histogram{};
  for (std::size_t pixel = 0; pixel < pixels; ++pixel) ++histogram[source[pixel * channels]];
  // The sum of the non-zero bins but the last non-zero one.
  std::int64_t total = 0, last_nonzero = 0;
  for (const std::int64_t count : histogram) {
    if (count == 0) continue;
    total += last_nonzero;
    last_nonzero = count;
  }
  const std::int64_t step = total / 255;
  if (step == 0) {
    for (std::size_t pixel = 0; pixel < pixels; ++pixel)
      destination[pixel * channels] = source[pixel * channels];
    return;
  }
  std::array<Pixel, 256> table{};
  std::int64_t cumulative = 0;
  for (int value = 0; value < 256; ++value) {
    table[value] = static_cast<Pixel>(std::min<std::int64_t>((cumulative + step / 2) / step, 255));
    cumulative += histogram[value];
  }
  for (std::size_t pixel = 0; pixel < pixels; ++pixel)
    destination[pixel * channels] = table[source[pixel * channels]];
}

void autocontrast_channel(const Pixel* source, Pixel* destination, std::size_t pixels, int channels) {
  Pixel lowest = 255, highest = 0;
  for (std::size_t pixel = 0; pixel < pixels; ++pixel) {
    lowest = std::min(lowest, source[pixel * channels]);
    highest = std::max(highest, source[pixel * channels]);
  }
  float minimum = static_cast<float>(lowest);
  // bound / (maximum - minimum) with a Python number on the left is Tensor.__rtruediv__, i.e.
  // reciprocal(maximum - minimum) * bound: two roundings.
  const float reciprocal = 1.0f / (static_cast<float>(highest) - minimum);
  float scale = reciprocal * 255.0f;
  if (!std::isfinite(scale)) minimum = 0.0f, scale = 1.0f;
  for (std::size_t pixel = 0; pixel < pixels; ++pixel) {
    const float shifted = static_cast<float>(source[pixel * channels]) - minimum;
    const float scaled = shifted * scale;
    destination[pixel * channels] = to_pixel(scaled);
  }
}

}  // namespace

void apply_augment_operation(const AugmentOperationDraw& draw, const std::uint8_t* source,
                             std::uint8_t* destination, int height, int width, int channels) {
  PHALANX_CHECK(height > 0 && width > 0 && channels > 0, "image ", height, "x", width, "x", channels);
  PHALANX_CHECK(draw.operation >= 0 && draw.operation < augment_operation_count, "augment operation ",
                draw.operation);
  const auto pixels = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  const std::size_t values = pixels * static_cast<std::size_t>(channels);
  const float* parameters = draw.parameters;
  const float ratio = parameters[0], complement = parameters[1];
  switch (static_cast<AugmentOperation>(draw.operation)) {
    case AugmentOperation::Identity: std::memcpy(destination, source, values); return;
    case AugmentOperation::ShearX:
    case AugmentOperation::ShearY:
    case AugmentOperation::TranslateX:
    case AugmentOperation::TranslateY:
    case AugmentOperation::Rotate: affine(parameters, source, destination, height, width, channels); return;
    case AugmentOperation::Brightness:
      for (std::size_t index = 0; index < values; ++index)
        destination[index] = blend(ratio, complement, static_cast<float>(source[index]), 0.0f);
      return;
    case AugmentOperation::Color:
      if (channels != 3) {
        std::memcpy(destination, source, values);
        return;
      }
      for (std::size_t pixel = 0; pixel < pixels; ++pixel) {
        const float gray = static_cast<float>(grayscale(source + pixel * 3));
        for (std::size_t channel = 0; channel < 3; ++channel)
          destination[pixel * 3 + channel] =
              blend(ratio, complement, static_cast<float>(source[pixel * 3 + channel]), gray);
      }
      return;
    case AugmentOperation::Contrast: {
      // An exact integer sum (as torchvision's float32 sum is while it stays below 2^24), then
      // one float division, as torch.mean.
      std::int64_t sum = 0;
      if (channels == 3) {
        for (std::size_t pixel = 0; pixel < pixels; ++pixel) sum += grayscale(source + pixel * 3);
      } else {
        for (std::size_t index = 0; index < values; ++index) sum += source[index];
      }
      const std::size_t count = channels == 3 ? pixels : values;
      const float mean = static_cast<float>(sum) / static_cast<float>(count);
      for (std::size_t index = 0; index < values; ++index)
        destination[index] = blend(ratio, complement, static_cast<float>(source[index]), mean);
      return;
    }
    case AugmentOperation::Sharpness: {
      if (height <= 2 || width <= 2) {
        std::memcpy(destination, source, values);
        return;
      }
      // The smoothing kernel [1 1 1; 1 5 1; 1 1 1] / 13, rounded: sum / 13 is never within float
      // error of a half (the nearest fractions are 6/13 and 7/13), so exact integers give
      // torchvision's rounded float convolution.
      const auto row_values = static_cast<std::size_t>(width) * channels;
      for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
          for (int channel = 0; channel < channels; ++channel) {
            const std::size_t index =
                static_cast<std::size_t>(y) * row_values + static_cast<std::size_t>(x) * channels + channel;
            int degenerate = source[index];
            if (y > 0 && y < height - 1 && x > 0 && x < width - 1) {
              int sum = 4 * source[index];
              for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx)
                  sum += source[index +
                                static_cast<std::ptrdiff_t>(dy) * static_cast<std::ptrdiff_t>(row_values) +
                                static_cast<std::ptrdiff_t>(dx) * channels];
              degenerate = (2 * sum + 13) / 26;
            }
            destination[index] =
                blend(ratio, complement, static_cast<float>(source[index]), static_cast<float>(degenerate));
          }
        }
      }
      return;
    }
    case AugmentOperation::Posterize: {
      const int bits = static_cast<int>(parameters[0]);
      PHALANX_CHECK(bits >= 0 && bits <= 8, "posterize bits ", bits);
      const auto mask = static_cast<Pixel>(0xFF00u >> bits);
      for (std::size_t index = 0; index < values; ++index) destination[index] = source[index] & mask;
      return;
    }
    case AugmentOperation::Solarize: {
      const float threshold = parameters[0];
      for (std::size_t index = 0; index < values; ++index)
        destination[index] = static_cast<float>(source[index]) >= threshold
                                 ? static_cast<Pixel>(255 - source[index])
                                 : source[index];
      return;
    }
    case AugmentOperation::AutoContrast:
      for (int channel = 0; channel < channels; ++channel)
        autocontrast_channel(source + channel, destination + channel, pixels, channels);
      return;
    case AugmentOperation::Equalize:
      for (int channel = 0; channel < channels; ++channel)
        equalize_channel(source + channel, destination + channel, pixels, channels);
      return;
  }
}

}  // namespace phalanx
