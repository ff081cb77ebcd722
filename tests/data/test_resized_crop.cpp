// Tests of the resampling windows: RandomResizedCrop's boxes stay inside the image with area and
// aspect ratio in range (up to the rounding of each side), follow only from (seed, epoch, sample
// index), fall back to torchvision's central crop; Resize + CenterCrop's window has torchvision's
// sizes and offsets; resampling a box onto its own size copies it. (The pixels themselves are
// compared with torchvision in test_augmentation_golden.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/data/resized_crop.hpp"

namespace phalanx::data {
namespace {

TEST(ResizedCrop, RandomBoxesStayInsideWithAreaAndRatioInRange) {
  const int height = 40, width = 30;
  const ResizedCropRanges ranges;  // torchvision's defaults
  int smallest_area_seen = height * width, touching_bottom = 0, touching_top = 0;
  for (std::int64_t sample = 0; sample < 3000; ++sample) {
    const ResampleWindow window = random_resized_crop_window(ranges, 17, 2, sample, height, width, 24, 20);
    ASSERT_EQ(window.resized_height, 24);
    ASSERT_EQ(window.resized_width, 20);
    ASSERT_EQ(window.offset_y, 0);
    ASSERT_EQ(window.offset_x, 0);
    ASSERT_GE(window.top, 0);
    ASSERT_GE(window.left, 0);
    ASSERT_GE(window.height, 1);
    ASSERT_GE(window.width, 1);
    ASSERT_LE(window.top + window.height, height);
    ASSERT_LE(window.left + window.width, width);
    // Each side is a rounding of sqrt(area * ratio) or sqrt(area / ratio): off by at most 1/2.
    const double rows = window.height, columns = window.width;
    ASSERT_GE((rows + 0.5) * (columns + 0.5), 0.08 * height * width) << "sample " << sample;
    ASSERT_GE((columns + 0.5) / (rows - 0.5), 3.0 / 4.0) << "sample " << sample;
    ASSERT_LE((columns - 0.5) / (rows + 0.5), 4.0 / 3.0) << "sample " << sample;
    smallest_area_seen = std::min(smallest_area_seen, window.height * window.width);
    touching_top += window.top == 0;
    touching_bottom += window.top + window.height == height;
    // A pure function of its arguments.
    const ResampleWindow again = random_resized_crop_window(ranges, 17, 2, sample, height, width, 24, 20);
    ASSERT_EQ(again.top, window.top);
    ASSERT_EQ(again.left, window.left);
    ASSERT_EQ(again.height, window.height);
    ASSERT_EQ(again.width, window.width);
  }
  EXPECT_LT(smallest_area_seen, 0.15 * height * width) << "the scale range's low end is reached";
  EXPECT_GT(touching_top, 0);
  EXPECT_GT(touching_bottom, 0);
}

TEST(ResizedCrop, BoxesDependOnSeedEpochAndSample) {
  const ResizedCropRanges ranges;
  int differ_by_epoch = 0, differ_by_seed = 0, differ_by_sample = 0;
  const auto box = [&](std::uint64_t seed, std::int64_t epoch, std::int64_t sample) {
    const ResampleWindow window = random_resized_crop_window(ranges, seed, epoch, sample, 64, 64, 32, 32);
    return std::vector<std::int32_t>{window.top, window.left, window.height, window.width};
  };
  for (std::int64_t sample = 0; sample < 100; ++sample) {
    differ_by_epoch += box(3, 0, sample) != box(3, 1, sample);
    differ_by_seed += box(3, 0, sample) != box(4, 0, sample);
    differ_by_sample += box(3, 0, sample) != box(3, 0, sample + 100);
  }
  EXPECT_GE(differ_by_epoch, 95);
  EXPECT_GE(differ_by_seed, 95);
  EXPECT_GE(differ_by_sample, 95);
}

// No try fits: torchvision's central crop at the ratio range's nearer end, or the whole image.
TEST(ResizedCrop, FallsBackToTorchvisionsCentralCrop) {
  struct Case {
    int height, width;
    ResizedCropRanges ranges;
    int top, left, rows, columns;
  };
  // Scale [1, 1] asks for the whole area at a ratio the image does not have: never fits.
  const Case cases[] = {
      {10, 10, {1.0, 1.0, 2.0, 2.0}, 2, 0, 5, 10},   // image ratio 1 < 2: full width, height 10 / 2
      {10, 10, {1.0, 1.0, 0.5, 0.5}, 0, 2, 10, 5},   // image ratio 1 > 0.5: full height, width 10 * 0.5
      {10, 12, {1.0, 1.0, 1.0, 1.0}, 0, 1, 10, 10},  // 11 x 11 does not fit 10 x 12; ratio 1.2 > 1
  };
  for (const Case& test : cases) {
    for (std::int64_t sample = 0; sample < 20; ++sample) {
      const ResampleWindow window =
          random_resized_crop_window(test.ranges, 1, 0, sample, test.height, test.width, 4, 4);
      EXPECT_EQ(window.top, test.top) << test.height << "x" << test.width;
      EXPECT_EQ(window.left, test.left) << test.height << "x" << test.width;
      EXPECT_EQ(window.height, test.rows) << test.height << "x" << test.width;
      EXPECT_EQ(window.width, test.columns) << test.height << "x" << test.width;
    }
  }
}

TEST(ResizedCrop, CenterCropWindowHasTorchvisionsSizesAndOffsets) {
  // Resize(256) of 300 x 400: 256 x int(256 * 400 / 300) = 256 x 341; CenterCrop(224) offsets
  // round(32 / 2) = 16 and round(117 / 2) = 58 (58.5, halves to even).
  ResampleWindow window = center_crop_window(300, 400, 256, 224, 224);
  EXPECT_EQ(window.top, 0);
  EXPECT_EQ(window.left, 0);
  EXPECT_EQ(window.height, 300);
  EXPECT_EQ(window.width, 400);
  EXPECT_EQ(window.resized_height, 256);
  EXPECT_EQ(window.resized_width, 341);
  EXPECT_EQ(window.offset_y, 16);
  EXPECT_EQ(window.offset_x, 58);
  // The taller image: the width is the shorter side.
  window = center_crop_window(500, 375, 256, 224, 200);
  EXPECT_EQ(window.resized_width, 256);
  EXPECT_EQ(window.resized_height, 341);
  EXPECT_EQ(window.offset_y, 58);
  EXPECT_EQ(window.offset_x, 28);
  EXPECT_THROW(center_crop_window(32, 32, 28, 30, 30), Error);
}

TEST(ResizedCrop, ResamplingABoxOntoItsOwnSizeCopiesIt) {
  const int height = 9, width = 11, channels = 3;
  std::vector<std::uint8_t> source(static_cast<std::size_t>(height * width * channels));
  for (std::size_t index = 0; index < source.size(); ++index)
    source[index] = static_cast<std::uint8_t>(index * 37);
  ResampleWindow window{2, 3, 5, 6, 5, 6, 0, 0};
  std::vector<std::uint8_t> output(static_cast<std::size_t>(5 * 6 * channels));
  resample_bilinear(window, source.data(), height, width, channels, output.data(), 5, 6);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 6; ++x)
      for (int channel = 0; channel < channels; ++channel)
        ASSERT_EQ(output[static_cast<std::size_t>((y * 6 + x) * channels + channel)],
                  source[static_cast<std::size_t>(((y + 2) * width + x + 3) * channels + channel)]);
  // A box reaching outside the image, or an output outside the resized box, is refused.
  window.top = 5;
  EXPECT_THROW(resample_bilinear(window, source.data(), height, width, channels, output.data(), 5, 6), Error);
  window.top = 2;
  EXPECT_THROW(resample_bilinear(window, source.data(), height, width, channels, output.data(), 6, 6), Error);
}

}  // namespace
}  // namespace phalanx::data
