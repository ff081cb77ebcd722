// Training-time image augmentation on CPU ranks (random crop with zero padding, horizontal flip,
// TrivialAugmentWide or RandAugment, cutout, random erasing), applied by the Loader thread to uint8 NHWC
// samples. Every random choice is a pure function of (seed, epoch, sample index), so a GPU kernel can
// reproduce it bit for bit.
#pragma once

#include <cstdint>

#include "phalanx/data/auto_augment.hpp"
#include "phalanx/data/resized_crop.hpp"

namespace phalanx::data {

// torchvision's RandomErasing(p, scale, ratio, value=0) on the uint8 image: with probability
// `probability`, one rectangle of area scale x (height x width) and aspect ratio (height / width)
// `ratio`, both drawn from their ranges (the ratio log-uniformly), is set to 0 in every channel.
struct RandomErasingOptions {
  double probability = 0.0;  // 0: off
  double scale_min = 0.02, scale_max = 0.33;
  double ratio_min = 0.3, ratio_max = 3.3;

  bool enabled() const { return probability > 0.0; }
  friend bool operator==(const RandomErasingOptions&, const RandomErasingOptions&) = default;
};

// torchvision's RandomResizedCrop(size, scale, ratio): the first step, and the only one that
// changes the image's size (stored height x width to size x size). The Loader applies it on every
// rank, CPU or GPU (random_resized_crop_window, then resample_bilinear); the steps below then work
// on the size x size image.
struct ResizedCropOptions {
  int size = 0;  // 0: off
  ResizedCropRanges ranges;

  bool enabled() const { return size > 0; }
  friend bool operator==(const ResizedCropOptions&, const ResizedCropOptions&) = default;
};

struct AugmentOptions {
  int random_crop_padding = 0;   // 0: off
  bool horizontal_flip = false;  // flip with probability 0.5
  int cutout = 0;                // side length of the zeroed square; 0: off
  RandomErasingOptions random_erasing;
  AutoAugmentOptions auto_augment;  // after the crop and flip, before cutout and erasing
  ResizedCropOptions random_resized_crop;  // before all of the above (Loader)

  // Whether any step that keeps the image's size is on (what augment_image and the input kernel
  // apply; random_resized_crop is the Loader's own).
  bool enabled() const {
    return random_crop_padding > 0 || horizontal_flip || cutout > 0 || random_erasing.enabled() ||
           auto_augment.enabled();
  }
  friend bool operator==(const AugmentOptions&, const AugmentOptions&) = default;
};

// One sample's random choices, resolved (see the contract on augment_image): the output pixel
// (y, x) is cropped(y, flip ? width - 1 - x : x) with cropped(y, x) = source(y + shift_y,
// x + shift_x) (zero outside the image), then the auto-augment ops of `operations` in order
// (apply_augment_operation; Identity in unused slots), then rows [cutout_top, cutout_top + cutout) and
// columns [cutout_left, cutout_left + cutout) are zeroed, then rows [erase_top, erase_top + erase_height) and
// columns [erase_left, erase_left + erase_width) (an empty rectangle when random erasing is off or did not
// fire). A GPU rank ships these augment_draw_words 32-bit words per sample with the plain uint8 batch and
// applies them in the input kernel, so both paths share one definition of the random choices and give the
// same bits.
struct AugmentDraws {
  std::int32_t shift_y = 0;
  std::int32_t shift_x = 0;
  std::int32_t flip = 0;  // 0 or 1
  std::int32_t cutout_top = 0;
  std::int32_t cutout_left = 0;
  std::int32_t erase_top = 0;
  std::int32_t erase_left = 0;
  std::int32_t erase_height = 0;  // 0: nothing erased
  std::int32_t erase_width = 0;
  AugmentOperationDraw operations[max_augment_operations];  // 7 words each: op, 6 float parameters
};
// The 32-bit words of one sample's draws, as the input kernels index them.
inline constexpr int augment_draw_words = 9 + 7 * max_augment_operations;
static_assert(sizeof(AugmentDraws) == augment_draw_words * sizeof(std::int32_t),
              "AugmentDraws is shipped as int32[augment_draw_words]");

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
//   2b. TrivialAugmentWide or RandAugment: the ops of auto_augment_draws (data/auto_augment.hpp),
//      one after the other, on the cropped and flipped image.
//   3. cutout: centre (cy, cx) uniform over [0, height) x [0, width); rows [cy - L/2, cy - L/2 + L)
//      and columns likewise (L = cutout, L/2 rounded down), clipped to the image, set to 0 in
//      every channel. For even L this is DeVries & Taylor's reference code; for odd L the square
//      keeps its side L, where theirs drops one row and column.
//   4. random erasing (torchvision's RandomErasing, which comes last in its recipes): with
//      probability p, the rectangle of erase_draws below is set to 0 in every channel. It erases
//      the uint8 image, so the rectangle is black (torchvision's value=0 after Normalize would be
//      the mean colour instead).
//
// Random draws (the contract a GPU kernel must follow to match): with
//   stream = mix_seed(mix_seed(fnv1a_hash("augment"), epoch), sample_index),
//   words  = philox4x32(seed, stream, 0) followed by philox4x32(seed, stream, 1),
// the draws are i = below(words[0], 2P+1), j = below(words[1], 2P+1), flip = words[2] >> 31,
// cy = below(words[3], height), cx = below(words[4], width), where below(w, n) =
// (uint64(w) * n) >> 32. Each draw has a fixed word whether or not its step is enabled, so turning
// one augmentation on or off never changes another's choices. `sample_index` is the sample's
// index in the split, so the result does not depend on rank count, thread timing or resume.
// Random erasing and the auto-augment ops draw from streams of their own (see erase_draws and
// auto_augment_draws).
void augment_image(const AugmentOptions& options, std::uint64_t seed, std::int64_t epoch,
                   std::int64_t sample_index, const std::uint8_t* source, std::uint8_t* destination,
                   int height, int width, int channels);

// Applies resolved draws (augment_draws' contract above) to one image: what augment_image does
// after drawing, and what a test compares with torchvision's functional ops for chosen draws.
void apply_augment_draws(const AugmentDraws& draws, int cutout, const std::uint8_t* source,
                         std::uint8_t* destination, int height, int width, int channels);

// The rectangle random erasing zeroes in sample `sample_index` of `epoch` (top, left, height,
// width; height 0 when nothing is erased), reproducing torchvision's RandomErasing.get_params
// with a fixed number of Philox words, so the choice never depends on earlier tries' outcomes:
//   stream = mix_seed(mix_seed(fnv1a_hash("random_erasing"), epoch), sample_index)
//   fire   = uniform(philox4x32(seed, stream, 0)[0]) < probability, uniform(w) = w / 2^32
//   try t in 0..9, words = philox4x32(seed, stream, 1 + t):
//     area  = height * width * (scale_min + (scale_max - scale_min) * uniform(words[0]))
//     ratio = exp(log(ratio_min) + (log(ratio_max) - log(ratio_min)) * uniform(words[1]))
//     h = round(sqrt(area * ratio)), w = round(sqrt(area / ratio)) (ties to even, as Python's round)
//     the first try with h < height and w < width gives top = below(words[2], height - h + 1) and
//     left = below(words[3], width - w + 1); when no try fits, nothing is erased (torchvision
//     returns the image unchanged).
// All in double precision, on the host: a GPU rank gets the rectangle with the other draws.
struct EraseRectangle {
  std::int32_t top = 0, left = 0, height = 0, width = 0;
};
EraseRectangle erase_draws(const RandomErasingOptions& options, std::uint64_t seed, std::int64_t epoch,
                           std::int64_t sample_index, int height, int width);

}  // namespace phalanx::data
