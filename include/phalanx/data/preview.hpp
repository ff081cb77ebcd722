// `phalanx data preview`: a PNG grid of sample images with their class names under them, because
// people would rather look at a dataset than read its statistics. The layout is returned so tests
// (and callers) know exactly where each sample landed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace phalanx::data {

inline constexpr int largest_preview_count = 1024;

struct PreviewOptions {
  std::string split = "train";
  int count = 64;          // samples shown, in [1, largest_preview_count]; fewer if the split is smaller
  std::uint64_t seed = 0;  // which samples: the same seed always shows the same ones
};

// Where everything is in the written image, in pixels.
struct PreviewLayout {
  int width = 0, height = 0;  // of the whole PNG
  int channels = 0;           // 1: grayscale PNG, 3: RGB PNG
  int scale = 1;              // each source pixel becomes scale x scale PNG pixels
  int columns = 0, rows = 0;  // of the grid
  int cell_width = 0, cell_height = 0;
  int image_offset_x = 0, image_offset_y = 0;  // of an image inside its cell
  std::vector<std::int64_t> samples;           // sample indices shown, in grid order (row by row)

  int image_x(std::size_t tile) const {
    return static_cast<int>(tile % columns) * cell_width + image_offset_x;
  }
  int image_y(std::size_t tile) const {
    return static_cast<int>(tile / columns) * cell_height + image_offset_y;
  }
};

// Writes the grid of `options.count` samples of `options.split` of the dataset at `dataset_path`
// to `output_path` (atomically). Throws InvalidInput naming a bad split or count.
PreviewLayout write_preview(const std::string& dataset_path, const std::string& output_path,
                            const PreviewOptions& options = {});

// The same image, in memory: 8-bit pixels, row by row, `layout.channels` per pixel.
std::vector<std::uint8_t> render_preview(const std::string& dataset_path, const PreviewOptions& options,
                                         PreviewLayout& layout);

}  // namespace phalanx::data
