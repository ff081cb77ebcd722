// Bilinear resampling of a box of a uint8 image onto a smaller or larger grid, and the two boxes
// that use it: torchvision's RandomResizedCrop (training) and Resize + CenterCrop (evaluation).
// Integer arithmetic throughout, so any implementation (a loader, a device kernel) gives the same
// bytes.
#pragma once

#include <cstdint>

namespace phalanx::data {

// Where the output grid samples the source: the box [top, top + height) x [left, left + width) of
// the source is resized to resized_height x resized_width, and output pixel (y, x) is pixel
// (y + offset_y, x + offset_x) of that (an offset crop after the resize, as CenterCrop).
struct ResampleWindow {
  std::int32_t top = 0, left = 0, height = 0, width = 0;
  std::int32_t resized_height = 0, resized_width = 0;
  std::int32_t offset_y = 0, offset_x = 0;
};

// torchvision's F.resize(crop, [resized_height, resized_width], BILINEAR, antialias=False) of the
// window's box, then the offset crop, for the output_height x output_width x channels image at
// `destination`. Resized row r reads the box at s = ((2r + 1) * height - resized_height) /
// (2 * resized_height) (PyTorch's align_corners=False source index, clamped at 0), rows floor(s)
// and floor(s) + 1 (the last row twice at the bottom edge) with weights 1 - frac(s) and frac(s);
// columns likewise. s and its weights are exact fractions here (PyTorch rounds them to float),
// and the weighted sum is rounded to the nearest integer, halves to even (torch.round): within 1 of
// torchvision's bytes, and equal for nearly all.
void resample_bilinear(const ResampleWindow& window, const std::uint8_t* source, int source_height,
                       int source_width, int channels, std::uint8_t* destination, int output_height,
                       int output_width);

// RandomResizedCrop's ranges: the box's area as a fraction of the image's, and its aspect ratio
// width / height (drawn log-uniformly), as torchvision's scale and ratio.
struct ResizedCropRanges {
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;

  friend bool operator==(const ResizedCropRanges&, const ResizedCropRanges&) = default;
};

// The box RandomResizedCrop.get_params picks in sample `sample_index` of `epoch`, resized to the
// output size. torchvision's ten tries, each with a fixed number of Philox words so no draw
// depends on an earlier try's outcome:
//   stream = mix_seed(mix_seed(fnv1a_hash("random_resized_crop"), epoch), sample_index)
//   try t in 0..9, words = philox4x32(seed, stream, t), uniform(w) = w / 2^32:
//     area  = height * width * (scale_min + (scale_max - scale_min) * uniform(words[0]))
//     ratio = exp(log(ratio_min) + (log(ratio_max) - log(ratio_min)) * uniform(words[1]))
//     w = round(sqrt(area * ratio)), h = round(sqrt(area / ratio)) (ties to even, as Python's round)
//     the first try with 0 < w <= width and 0 < h <= height gives top = below(words[2],
//     height - h + 1), left = below(words[3], width - w + 1), below(w, n) = (w * n) >> 32.
//   No try fits: torchvision's central crop (the whole image, or the widest or tallest box of the
//   ratio range's nearer end that fits, centred).
// In double precision, on the host: the Loader crops on every rank, a GPU rank's included, and
// ships the training-size crop (data/loader.hpp).
ResampleWindow random_resized_crop_window(const ResizedCropRanges& ranges, std::uint64_t seed,
                                          std::int64_t epoch, std::int64_t sample_index, int source_height,
                                          int source_width, int output_height, int output_width);

// Evaluation's Resize(resize) + CenterCrop([output_height, output_width]): the shorter side resized
// to `resize` (the longer to floor(resize * longer / shorter), as torchvision's int()), then the
// centred output box (offsets round((resized - output) / 2), halves to even). Needs resize large
// enough that the resized image holds the output box.
ResampleWindow center_crop_window(int source_height, int source_width, int resize, int output_height,
                                  int output_width);

}  // namespace phalanx::data
