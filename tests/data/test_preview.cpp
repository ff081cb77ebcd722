// Tests of `phalanx data preview`: the PNG decodes (libpng's reader) at the size the layout says,
// shows the chosen samples' own pixels upscaled, draws a label under each, picks samples by seed,
// and refuses a bad split or count with an input error that names it.
#include <png.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/importers.hpp"
#include "phalanx/data/preview.hpp"
#include "support/test_support.hpp"

namespace phalanx::data {
namespace {

using phalanx::testing::make_split;
using phalanx::testing::ScratchDirectory;

struct DecodedPng {
  int width = 0, height = 0, channels = 0;
  std::vector<std::uint8_t> pixels;
  std::uint8_t at(int x, int y, int channel) const {
    return pixels[(static_cast<std::size_t>(y) * width + x) * channels + channel];
  }
};

// Decodes with libpng's simplified reader, in the PNG's own format (gray or RGB).
DecodedPng decode_png(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  DecodedPng decoded;
  if (!png_image_begin_read_from_file(&image, path.c_str())) {
    ADD_FAILURE() << path << ": " << image.message;
    return decoded;
  }
  decoded.channels = (image.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
  image.format = decoded.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  decoded.width = static_cast<int>(image.width);
  decoded.height = static_cast<int>(image.height);
  decoded.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, decoded.pixels.data(), 0, nullptr)) {
    ADD_FAILURE() << path << ": " << image.message;
    png_image_free(&image);
  }
  return decoded;
}

std::string write_dataset_of(const ScratchDirectory& scratch, int height, int width, int channels) {
  const Split train = make_split("train", 120, height, width, channels, 10, 1);
  const Split test = make_split("test", 9, height, width, channels, 10, 2);
  const std::string path = scratch.file("data.h5");
  write_dataset(path, fashion_mnist_classes(), {&train, &test});
  return path;
}

// Every pixel of tile `tile` equals its source pixel, each repeated scale x scale times.
void expect_tile_shows_sample(const DecodedPng& png, const PreviewLayout& layout, std::size_t tile,
                              const std::string& dataset_path, const std::string& split_name) {
  const Split source = read_samples(dataset_path, split_name, {layout.samples[tile]});
  const int left = layout.image_x(tile), top = layout.image_y(tile);
  int mismatches = 0;
  for (int y = 0; y < source.height * layout.scale; ++y)
    for (int x = 0; x < source.width * layout.scale; ++x)
      for (int channel = 0; channel < png.channels; ++channel) {
        const std::uint8_t expected =
            source.images[(static_cast<std::size_t>(y / layout.scale) * source.width + x / layout.scale) *
                              source.channels +
                          channel];
        if (png.at(left + x, top + y, channel) != expected) ++mismatches;
      }
  EXPECT_EQ(mismatches, 0) << "tile " << tile;
}

TEST(Preview, GrayscaleGridDecodesAndShowsTheSamples) {
  ScratchDirectory scratch("preview_gray");
  const std::string dataset_path = write_dataset_of(scratch, 8, 8, 1);
  const std::string png_path = scratch.file("grid.png");
  const PreviewLayout layout = write_preview(dataset_path, png_path, {"train", 16, 3});

  ASSERT_EQ(layout.samples.size(), 16u);
  EXPECT_EQ(layout.columns, 4);
  EXPECT_EQ(layout.rows, 4);
  EXPECT_EQ(layout.scale, 7);  // 8 px upscaled to at least 56
  const DecodedPng png = decode_png(png_path);
  EXPECT_EQ(png.width, layout.width);
  EXPECT_EQ(png.height, layout.height);
  EXPECT_EQ(png.channels, 1);
  const auto [darkest, brightest] = std::minmax_element(png.pixels.begin(), png.pixels.end());
  EXPECT_LT(*darkest, *brightest) << "blank image";
  expect_tile_shows_sample(png, layout, 0, dataset_path, "train");
  expect_tile_shows_sample(png, layout, 15, dataset_path, "train");
  // No temporary file is left next to the PNG.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(scratch.path()), {}), 2);
}

TEST(Preview, LabelIsDrawnUnderEachImage) {
  ScratchDirectory scratch("preview_label");
  const std::string dataset_path = write_dataset_of(scratch, 8, 8, 1);
  const std::string png_path = scratch.file("grid.png");
  const PreviewLayout layout = write_preview(dataset_path, png_path, {"test", 4, 0});
  const DecodedPng png = decode_png(png_path);
  for (std::size_t tile = 0; tile < layout.samples.size(); ++tile) {
    const int label_top = layout.image_y(tile) + 8 * layout.scale;
    const int cell_left =
        static_cast<int>(tile % static_cast<std::size_t>(layout.columns)) * layout.cell_width;
    int ink = 0;
    for (int y = label_top; y < label_top + layout.cell_height - 8 * layout.scale - layout.image_offset_y;
         ++y)
      for (int x = cell_left; x < cell_left + layout.cell_width; ++x) ink += png.at(x, y, 0) == 0;
    EXPECT_GT(ink, 5) << "no label under tile " << tile;
  }
}

TEST(Preview, ColourImagesStayColour) {
  ScratchDirectory scratch("preview_rgb");
  const std::string dataset_path = write_dataset_of(scratch, 4, 6, 3);
  const std::string png_path = scratch.file("grid.png");
  const PreviewLayout layout = write_preview(dataset_path, png_path, {"train", 10, 1});
  EXPECT_EQ(layout.scale, 10);  // the longer side, 6 px, upscaled to at least 56
  const DecodedPng png = decode_png(png_path);
  EXPECT_EQ(png.channels, 3);
  EXPECT_EQ(png.width, layout.width);
  EXPECT_EQ(png.height, layout.height);
  expect_tile_shows_sample(png, layout, 0, dataset_path, "train");
}

TEST(Preview, SeedChoosesTheSamples) {
  ScratchDirectory scratch("preview_seed");
  const std::string dataset_path = write_dataset_of(scratch, 8, 8, 1);
  PreviewLayout first, again, other;
  render_preview(dataset_path, {"train", 20, 7}, first);
  render_preview(dataset_path, {"train", 20, 7}, again);
  render_preview(dataset_path, {"train", 20, 8}, other);
  EXPECT_EQ(first.samples, again.samples);
  EXPECT_NE(first.samples, other.samples);
  EXPECT_TRUE(std::is_sorted(first.samples.begin(), first.samples.end()));
  EXPECT_EQ(std::adjacent_find(first.samples.begin(), first.samples.end()), first.samples.end());
  for (const std::int64_t sample : first.samples) EXPECT_TRUE(sample >= 0 && sample < 120) << sample;
}

TEST(Preview, CountAboveTheSplitShowsItAll) {
  ScratchDirectory scratch("preview_small_split");
  const std::string dataset_path = write_dataset_of(scratch, 8, 8, 1);
  PreviewLayout layout;
  render_preview(dataset_path, {"test", 64, 0}, layout);
  EXPECT_EQ(layout.samples, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(Preview, BadSplitAndCountAreNamed) {
  ScratchDirectory scratch("preview_bad");
  const std::string dataset_path = write_dataset_of(scratch, 8, 8, 1);
  const std::string png_path = scratch.file("grid.png");
  EXPECT_INPUT_ERROR(write_preview(dataset_path, png_path, {"val", 16, 0}), "no split \"val\"");
  EXPECT_INPUT_ERROR(write_preview(dataset_path, png_path, {"train", 0, 0}), "preview count 0");
  EXPECT_INPUT_ERROR(write_preview(dataset_path, png_path, {"train", 5000, 0}), "preview count 5000");
  EXPECT_FALSE(std::filesystem::exists(png_path));
}

}  // namespace
}  // namespace phalanx::data
