// The image operations of TrivialAugment and RandAugment (torchvision's op set), each applied to one
// uint8 HWC image with its parameters already resolved. In core because the loader (data) and the
// CPU backend's fused input kernel both apply them and neither module depends on the other.
#pragma once

#include <cstdint>

namespace phalanx {

// torchvision's op order in TrivialAugmentWide and RandAugment: a drawn op index means this enum.
enum class AugmentOperation : std::int32_t {
  Identity = 0,
  ShearX,
  ShearY,
  TranslateX,
  TranslateY,
  Rotate,
  Brightness,
  Color,
  Contrast,
  Sharpness,
  Posterize,
  Solarize,
  AutoContrast,
  Equalize,
};
inline constexpr int augment_operation_count = 14;

// One op with its parameters resolved on the host (double precision, as torchvision's Python),
// so every backend applies the same numbers. What `parameters` hold:
//   ShearX .. Rotate (nearest, fill 0): output pixel (x, y) takes source pixel
//       column = round(p0 * u + p1 * v + p2), row = round(p3 * u + p4 * v + p5),
//       u = x + 0.5 - width / 2, v = y + 0.5 - height / 2, each product and sum rounded to float
//       in that order, halves to even; zero where that pixel is outside the image. p0, p1, p3, p4
//       are torchvision's inverse affine matrix; p2 and p5 its translation plus (width - 1) / 2
//       and (height - 1) / 2, i.e. grid_sample's unnormalisation (align_corners=False) folded in.
//   Brightness, Color, Contrast, Sharpness: p0 = factor, p1 = 1 - factor (as floats); the result
//       is trunc(clamp(p0 * x + p1 * degenerate, 0, 255)) in float, torchvision's _blend, with the
//       degenerate image black, the grayscale image, the grayscale mean or the 3x3 smoothed image.
//   Posterize: p0 = bits kept (0 to 8). Solarize: p0 = threshold (x >= p0 becomes 255 - x).
//   Identity, AutoContrast, Equalize: none.
struct AugmentOperationDraw {
  std::int32_t operation = 0;  // AugmentOperation
  float parameters[6] = {};
};

// The ops per image at most (RandAugment's num_ops); the draws ship this many slots, Identity
// where unused.
inline constexpr int max_augment_operations = 4;

// Applies `draw` to the height x width x channels image at `source`, writing `destination` (which
// must not overlap it). Same results as torchvision's functional ops on the uint8 tensor: Color
// leaves a 1-channel image unchanged (as torchvision, matching PIL) and needs 3 channels
// otherwise; Contrast's mean is over the grayscale image for 3 channels and over every value
// otherwise; Sharpness keeps the border rows and columns' own values as the degenerate image
// (torchvision only smooths the interior) and leaves images of side <= 2 unchanged.
void apply_augment_operation(const AugmentOperationDraw& draw, const std::uint8_t* source,
                             std::uint8_t* destination, int height, int width, int channels);

}  // namespace phalanx
