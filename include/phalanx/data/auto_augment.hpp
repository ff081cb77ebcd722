// TrivialAugmentWide and RandAugment as torchvision defines them: which ops a sample gets, with
// which magnitudes, drawn from Philox keyed by (seed, epoch, sample index) so the loader and the
// input kernel of a GPU rank resolve the same ops, and a resume redraws them exactly.
#pragma once

#include <cstdint>

#include "phalanx/core/augment_operations.hpp"

namespace phalanx::data {

enum class AutoAugmentPolicy {
  Off,
  TrivialAugmentWide,  // one op per image, its magnitude bin uniform in [0, magnitude_bins)
  RandAugment,         // num_ops ops per image, each at bin `magnitude`
};

struct AutoAugmentOptions {
  AutoAugmentPolicy policy = AutoAugmentPolicy::Off;
  int num_ops = 2;          // RandAugment; at most max_augment_operations
  int magnitude = 9;        // RandAugment's bin, in [0, magnitude_bins)
  int magnitude_bins = 31;  // >= 2

  bool enabled() const { return policy != AutoAugmentPolicy::Off; }
  friend bool operator==(const AutoAugmentOptions&, const AutoAugmentOptions&) = default;
};

// The magnitude of `operation` at `bin` of the policy's table for a height x width image, as the
// float32 value torchvision's _augmentation_space holds (torch.linspace in float32; Posterize's
// bits 8 - round(bin / ((bins - 1) / 4)) for RandAugment and / 6 for TrivialAugmentWide), unsigned.
// 0 for Identity, AutoContrast and Equalize.
double augment_magnitude(AutoAugmentPolicy policy, AugmentOperation operation, int bin, int bins, int height,
                         int width);

// Whether torchvision flips the sign of `operation`'s magnitude with probability 1/2.
bool augment_magnitude_signed(AugmentOperation operation);

// The resolved parameters (see AugmentOperationDraw) of `operation` at a signed magnitude on a
// height x width image, as torchvision's _apply_op passes them to F.affine, F.rotate,
// F.adjust_* , F.posterize and F.solarize (shear angle atan(magnitude) in degrees about the
// top-left corner, translation int(magnitude) pixels, rotation by magnitude degrees about the
// centre, factors 1 + magnitude, posterize bits int(magnitude), solarize threshold magnitude).
AugmentOperationDraw resolve_augment_operation(AugmentOperation operation, double magnitude, int height,
                                               int width);

// The ops of sample `sample_index` in `epoch`, in the order they apply; slots past the policy's op
// count are Identity. Draws (the contract, one Philox call per slot):
//   stream = mix_seed(mix_seed(fnv1a_hash("auto_augment"), epoch), sample_index)
//   slot k: words = philox4x32(seed, stream, k); op = below(words[0], 14) (torchvision's order,
//           AugmentOperation); bin = below(words[1], magnitude_bins) for TrivialAugmentWide,
//           `magnitude` for RandAugment; negative when words[2] >> 31 and the op is signed.
void auto_augment_draws(const AutoAugmentOptions& options, std::uint64_t seed, std::int64_t epoch,
                        std::int64_t sample_index, int height, int width,
                        AugmentOperationDraw (&operations)[max_augment_operations]);

}  // namespace phalanx::data
