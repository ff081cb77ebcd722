// The image-folder importer: a tree with one folder per class (the folder name is the class
// name), PNG or JPEG files in each, decoded, converted to RGB or grey, resized to one size and
// written as a phalanx dataset. If the folder holds `train/` and `test/` trees, those are the
// splits; otherwise a seeded share of each class goes to test. A validation split can be carved
// from train by seed as for CIFAR.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/data/dataset.hpp"

namespace phalanx::data {

struct ImageFolderOptions {
  int height = 32, width = 32;
  int channels = 3;                  // 3: RGB, 1: grey
  double test_fraction = 0.2;        // used when there are no train/ and test/ subfolders
  double validation_fraction = 0.0;  // share of train moved to "val"
  std::uint64_t seed = 0;            // test and val splits, and the stored sample order
  int threads = 0;                   // decoding threads; 0: one per hardware thread
};

struct ImageFolderSummary {
  std::vector<std::string> classes;
  std::int64_t train = 0, test = 0, validation = 0;
  std::int64_t skipped_files = 0;  // files that are not .png/.jpg/.jpeg
};

ImageFolderSummary import_image_folder(const std::string& directory, const std::string& output_path,
                                       const ImageFolderOptions& options,
                                       const WriteOptions& write_options = {});

// One decoded image, interleaved HWC uint8.
struct DecodedImage {
  int height = 0, width = 0, channels = 0;
  std::vector<std::uint8_t> pixels;
};

// One axis of a resize: for output position i, the inputs first[i], first[i] + 1, ... weighted by
// weights[offsets[i]] up to weights[offsets[i + 1]].
struct ResizeTaps {
  std::vector<int> first, offsets;
  std::vector<float> weights;
};

// Buffers one thread reuses from image to image. Allocating them afresh for each image (a few
// hundred kilobytes, zeroed by the kernel page by page) took a fifth of an import's time.
struct ImageScratch {
  std::string file_bytes;
  std::vector<std::uint8_t> cmyk;
  ResizeTaps horizontal, vertical;
  std::vector<float> rows, sums;
};

// Decodes a PNG or JPEG file (chosen by content, not by name) into `channels` (1 or 3). Throws
// InvalidInput naming the file for anything unreadable.
DecodedImage decode_image(const std::string& path, int channels);
// The same into `into`, with `scratch`'s buffers.
void decode_image(const std::string& path, int channels, DecodedImage& into, ImageScratch& scratch);

// Resizes with a triangle (bilinear) filter whose support widens with the reduction, so that
// shrinking averages every source pixel instead of aliasing (the same scheme as Pillow's
// Image.resize with BILINEAR).
DecodedImage resize_image(const DecodedImage& image, int height, int width);
// The same into `into` (not `image`), with `scratch`'s buffers.
void resize_image(const DecodedImage& image, int height, int width, DecodedImage& into,
                  ImageScratch& scratch);

}  // namespace phalanx::data
