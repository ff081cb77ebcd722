// The integer arithmetic of bilinear resampling, written once for the loader
// (data::resample_bilinear), the CPU backend and the CUDA kernel (Backend::resample_images), so a
// GPU rank that resizes on the device gives the bytes a CPU rank's loader gives. constexpr integer
// code, which kernels call as they call core/philox.hpp (nvcc's --expt-relaxed-constexpr).
#pragma once

#include <cstdint>

namespace phalanx {

// One output row's (or column's) two source indices and the weight of the second, in units of
// 1 / (2 * resized).
struct BilinearTap {
  std::int64_t first = 0, second = 0, weight = 0;
};

// PyTorch's align_corners=False source index of resized position `index`, as an exact fraction:
// ((2 * index + 1) * extent - resized) / (2 * resized), clamped at 0, its floor and the next index
// (the same at the last one), offset by the box's start.
constexpr BilinearTap bilinear_tap(std::int64_t index, std::int64_t start, std::int64_t extent,
                                   std::int64_t resized) {
  const std::int64_t unclamped = (2 * index + 1) * extent - resized;
  const std::int64_t numerator = unclamped > 0 ? unclamped : 0;
  const std::int64_t denominator = 2 * resized;
  const std::int64_t floor = numerator / denominator;
  BilinearTap tap;
  tap.first = start + floor;
  tap.second = start + (floor + 1 < extent - 1 ? floor + 1 : extent - 1);
  tap.weight = numerator % denominator;
  return tap;
}

// sum / denominator to the nearest integer, halves to even: torch.round of the float result, which
// lands on exact halves often (a box resized by 2 has weights 1/4 and 3/4).
constexpr std::uint8_t bilinear_rounded(std::int64_t sum, std::int64_t denominator) {
  const std::int64_t quotient = sum / denominator, twice_remainder = 2 * (sum % denominator);
  const bool up = twice_remainder > denominator || (twice_remainder == denominator && (quotient & 1) != 0);
  return static_cast<std::uint8_t>(quotient + (up ? 1 : 0));
}

// One value of the output: channel `channel` between source rows row.first/row.second and columns
// column.first/column.second of an HWC image with `row_bytes` bytes per row. The denominators are
// 2 * resized height and 2 * resized width.
constexpr std::uint8_t bilinear_value(const std::uint8_t* source, std::int64_t row_bytes, int channels,
                                      int channel, const BilinearTap& row, const BilinearTap& column,
                                      std::int64_t row_denominator, std::int64_t column_denominator) {
  const std::uint8_t* upper = source + row.first * row_bytes;
  const std::uint8_t* lower = source + row.second * row_bytes;
  const std::int64_t upper_weight = row_denominator - row.weight, lower_weight = row.weight;
  const std::int64_t left_weight = column_denominator - column.weight, right_weight = column.weight;
  const std::int64_t left = column.first * channels + channel, right = column.second * channels + channel;
  // At most 255 * (2 * 2^15)^2 for resized sides up to 2^15: far inside int64.
  const std::int64_t sum = upper_weight * (left_weight * upper[left] + right_weight * upper[right]) +
                           lower_weight * (left_weight * lower[left] + right_weight * lower[right]);
  return bilinear_rounded(sum, row_denominator * column_denominator);
}

}  // namespace phalanx
