// Training-time image augmentation on CPU ranks (random crop with zero padding, horizontal flip,
// cutout), applied by the Loader thread to uint8 NHWC samples. Every random choice is a pure
// function of (seed, epoch, sample index), so a GPU kernel can reproduce it bit for bit.
#pragma once

#include <cstdint>

namespace phalanx::data {

struct AugmentOptions {
  int random_crop_padding = 0;   // 0: off
  bool horizontal_flip = false;  // flip with probability 0.5
  int cutout = 0;                // side length of the zeroed square; 0: off

  bool enabled() const { return random_crop_padding > 0 || horizontal_flip || cutout > 0; }
  friend bool operator==(const AugmentOptions&, const AugmentOptions&) = default;
};

// One sample's random choices, resolved (see the contract on augment_image): the output pixel
// (y, x) is cropped(y, flip ? width - 1 - x : x) with cropped(y, x) = source(y + shift_y,
// x + shift_x) (zero outside the image), then rows [cutout_top, cutout_top + cutout) and columns
// [cutout_left, cutout_left + cutout) are zeroed. A GPU rank ships these five int32 per sample
// with the plain uint8 batch and applies them in the input kernel, so both paths share one
// definition of the random choices and give the same bits.
struct AugmentDraws {
  std::int32_t shift_y = 0;
  std::int32_t shift_x = 0;
  std::int32_t flip = 0;  // 0 or 1
  std::int32_t cutout_top = 0;
  std::int32_t cutout_left = 0;
};
static_assert(sizeof(AugmentDraws) == 5 * sizeof(std::int32_t), "AugmentDraws is shipped as int32[5]");

// The draws of sample `sample_index` in `epoch`; disabled steps resolve to no-ops (shift 0, no
// flip; the cutout square has side options.cutout, so 0 zeroes nothing).
AugmentDraws augment_draws(const AugmentOptions& options, std::uint64_t seed, std::int64_t epoch,
                           std::int64_t sample_index, int height, int width);

// Writes the augmented copy of one height x width x channels uint8 image from `source` to
// `destination` (which must not overlap). Steps, in this order (as torchvision's RandomCrop,
// RandomHorizontalFlip, then Cutout):
//   1. crop: pad each side with `random_crop_padding` zero pixels and take the height x width
//      window at top-left (i, j), i and j uniform in [0, 2 * padding]; i.e. output(y, x) =
//      source(y + i - padding, x + j - padding), zero outside the image.
//   2. flip: with probability 0.5, output(y, x) = cropped(y, width - 1 - x).
//   3. cutout: centre (cy, cx) uniform over [0, height) x [0, width); rows [cy - L/2, cy - L/2 + L)
//      and columns likewise (L = cutout, L/2 rounded down), clipped to the image, set to 0 in
//      every channel. For even L this is DeVries & Taylor's reference code; for odd L the square
//      keeps its side L, where theirs drops one row and column.
//
// Random draws (the contract a GPU kernel must follow to match): with
//   stream = mix_seed(mix_seed(fnv1a_hash("augment"), epoch), sample_index),
//   words  = philox4x32(seed, stream, 0) followed by philox4x32(seed, stream, 1),
// the draws are i = below(words[0], 2P+1), j = below(words[1], 2P+1), flip = words[2] >> 31,
// cy = below(words[3], height), cx = below(words[4], width), where below(w, n) =
// (uint64(w) * n) >> 32. Each draw has a fixed word whether or not its step is enabled, so turning
// one augmentation on or off never changes another's choices. `sample_index` is the sample's
// index in the split, so the result does not depend on rank count, thread timing or resume.
void augment_image(const AugmentOptions& options, std::uint64_t seed, std::int64_t epoch,
                   std::int64_t sample_index, const std::uint8_t* source, std::uint8_t* destination,
                   int height, int width, int channels);

}  // namespace phalanx::data
