// TrivialAugmentWide's and RandAugment's op and magnitude draws, and the parameters each op gets:
// torchvision's magnitude tables and _get_inverse_affine_matrix, ported in the precision they
// run in (float32 tables, double matrices), so the ops see torchvision's numbers.
#include "phalanx/data/auto_augment.hpp"

#include <array>
#include <cmath>
#include <numbers>

#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::data {
namespace {

std::int64_t below(std::uint32_t word, std::int64_t bound) {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(word) * static_cast<std::uint64_t>(bound)) >>
                                   32);
}

// torch.linspace(start, end, steps)[index] in float32 as torch's CPU kernel gives it: from the
// start up to the middle, from the end after it, each value one fused multiply-add (its vectorised
// AVX2/AVX-512 path; std::fma rounds once on any CPU).
float linspace(double start, double end, int steps, int index) {
  const auto first = static_cast<float>(start), last = static_cast<float>(end);
  const float step = (last - first) / static_cast<float>(steps - 1);
  if (index < steps / 2) return std::fma(step, static_cast<float>(index), first);
  return std::fma(-step, static_cast<float>(steps - index - 1), last);
}

// Python's math.radians and math.degrees.
double radians(double degrees) {
  return degrees * (std::numbers::pi / 180.0);
}
double degrees(double radians) {
  return radians * (180.0 / std::numbers::pi);
}

// torchvision.transforms.functional._get_inverse_affine_matrix (inverted=True), scale 1.
std::array<double, 6> inverse_affine_matrix(double center_x, double center_y, double angle,
                                            double translate_x, double translate_y, double shear_x,
                                            double shear_y) {
  const double rotation = radians(angle), sx = radians(shear_x), sy = radians(shear_y);
  const double a = std::cos(rotation - sy) / std::cos(sy);
  const double b = -std::cos(rotation - sy) * std::tan(sx) / std::cos(sy) - std::sin(rotation);
  const double c = std::sin(rotation - sy) / std::cos(sy);
  const double d = -std::sin(rotation - sy) * std::tan(sx) / std::cos(sy) + std::cos(rotation);
  std::array<double, 6> matrix{d, -b, 0.0, -c, a, 0.0};
  matrix[2] += matrix[0] * (-center_x - translate_x) + matrix[1] * (-center_y - translate_y);
  matrix[5] += matrix[3] * (-center_x - translate_x) + matrix[4] * (-center_y - translate_y);
  matrix[2] += center_x;
  matrix[5] += center_y;
  return matrix;
}

}  // namespace

bool augment_magnitude_signed(AugmentOperation operation) {
  return operation >= AugmentOperation::ShearX && operation <= AugmentOperation::Sharpness;
}

double augment_magnitude(AutoAugmentPolicy policy, AugmentOperation operation, int bin, int bins, int height,
                         int width) {
  PHALANX_CHECK(policy != AutoAugmentPolicy::Off && bins >= 2 && bin >= 0 && bin < bins,
                "augment magnitude bin ", bin, " of ", bins);
  const bool wide = policy == AutoAugmentPolicy::TrivialAugmentWide;
  switch (operation) {
    case AugmentOperation::ShearX:
    case AugmentOperation::ShearY: return linspace(0.0, wide ? 0.99 : 0.3, bins, bin);
    case AugmentOperation::TranslateX: return linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * width, bins, bin);
    case AugmentOperation::TranslateY: return linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * height, bins, bin);
    case AugmentOperation::Rotate: return linspace(0.0, wide ? 135.0 : 30.0, bins, bin);
    case AugmentOperation::Brightness:
    case AugmentOperation::Color:
    case AugmentOperation::Contrast:
    case AugmentOperation::Sharpness: return linspace(0.0, wide ? 0.99 : 0.9, bins, bin);
    case AugmentOperation::Posterize: {
      // 8 - (arange(bins) / ((bins - 1) / k)).round(): a float32 division, halves to even.
      const auto divisor = static_cast<float>((bins - 1) / (wide ? 6.0 : 4.0));
      const float quotient = static_cast<float>(bin) / divisor;
      return 8.0 - static_cast<double>(std::nearbyint(quotient));
    }
    case AugmentOperation::Solarize: return linspace(255.0, 0.0, bins, bin);
    default: return 0.0;
  }
}

AugmentOperationDraw resolve_augment_operation(AugmentOperation operation, double magnitude, int height,
                                               int width) {
  AugmentOperationDraw draw;
  draw.operation = static_cast<std::int32_t>(operation);
  std::array<double, 6> matrix{};
  bool affine = true;
  switch (operation) {
    case AugmentOperation::ShearX:
      // center=[0, 0], i.e. the top-left corner, relative to the image centre.
      matrix = inverse_affine_matrix(-0.5 * width, -0.5 * height, 0.0, 0.0, 0.0,
                                     degrees(std::atan(magnitude)), 0.0);
      break;
    case AugmentOperation::ShearY:
      matrix = inverse_affine_matrix(-0.5 * width, -0.5 * height, 0.0, 0.0, 0.0, 0.0,
                                     degrees(std::atan(magnitude)));
      break;
    case AugmentOperation::TranslateX:
      matrix = inverse_affine_matrix(0.0, 0.0, 0.0, std::trunc(magnitude), 0.0, 0.0, 0.0);
      break;
    case AugmentOperation::TranslateY:
      matrix = inverse_affine_matrix(0.0, 0.0, 0.0, 0.0, std::trunc(magnitude), 0.0, 0.0);
      break;
    case AugmentOperation::Rotate:  // F.rotate passes -angle
      matrix = inverse_affine_matrix(0.0, 0.0, -magnitude, 0.0, 0.0, 0.0, 0.0);
      break;
    default: affine = false;
  }
  if (affine) {
    draw.parameters[0] = static_cast<float>(matrix[0]);
    draw.parameters[1] = static_cast<float>(matrix[1]);
    draw.parameters[2] = static_cast<float>(matrix[2] + 0.5 * width - 0.5);
    draw.parameters[3] = static_cast<float>(matrix[3]);
    draw.parameters[4] = static_cast<float>(matrix[4]);
    draw.parameters[5] = static_cast<float>(matrix[5] + 0.5 * height - 0.5);
    return draw;
  }
  switch (operation) {
    case AugmentOperation::Brightness:
    case AugmentOperation::Color:
    case AugmentOperation::Contrast:
    case AugmentOperation::Sharpness: {
      const double factor = 1.0 + magnitude;
      draw.parameters[0] = static_cast<float>(factor);
      draw.parameters[1] = static_cast<float>(1.0 - factor);
      break;
    }
    case AugmentOperation::Posterize: draw.parameters[0] = static_cast<float>(std::trunc(magnitude)); break;
    case AugmentOperation::Solarize: draw.parameters[0] = static_cast<float>(magnitude); break;
    default: break;
  }
  return draw;
}

void auto_augment_draws(const AutoAugmentOptions& options, std::uint64_t seed, std::int64_t epoch,
                        std::int64_t sample_index, int height, int width,
                        AugmentOperationDraw (&operations)[max_augment_operations]) {
  for (AugmentOperationDraw& operation : operations) operation = AugmentOperationDraw{};
  if (!options.enabled()) return;
  const bool wide = options.policy == AutoAugmentPolicy::TrivialAugmentWide;
  const int count = wide ? 1 : options.num_ops;
  PHALANX_CHECK(count >= 0 && count <= max_augment_operations && options.magnitude_bins >= 2 &&
                    (wide || (options.magnitude >= 0 && options.magnitude < options.magnitude_bins)),
                "auto augment num_ops ", count, " magnitude ", options.magnitude, " bins ",
                options.magnitude_bins);
  static const std::uint64_t auto_augment_stream = fnv1a_hash("auto_augment");
  const std::uint64_t stream = mix_seed(mix_seed(auto_augment_stream, static_cast<std::uint64_t>(epoch)),
                                        static_cast<std::uint64_t>(sample_index));
  for (int slot = 0; slot < count; ++slot) {
    const std::array<std::uint32_t, 4> words = philox4x32(seed, stream, static_cast<std::uint64_t>(slot));
    const auto operation = static_cast<AugmentOperation>(below(words[0], augment_operation_count));
    const int bin = wide ? static_cast<int>(below(words[1], options.magnitude_bins)) : options.magnitude;
    double magnitude =
        augment_magnitude(options.policy, operation, bin, options.magnitude_bins, height, width);
    if (augment_magnitude_signed(operation) && (words[2] >> 31) != 0) magnitude = -magnitude;
    operations[slot] = resolve_augment_operation(operation, magnitude, height, width);
  }
}

}  // namespace phalanx::data
