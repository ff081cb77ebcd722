// Tests of augment_image and of the Loader with augmentation: each step does what its definition
// says (mirror, shifted crop with zero fill, clipped cutout square), choices follow only from
// (seed, epoch, sample index), and the Loader applies it on request and is byte-exact when off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/augmentation.hpp"
#include "phalanx/data/loader.hpp"

namespace phalanx::data {
namespace {

// Every byte distinct and non-zero within an image, so positions can be traced back to the source.
std::vector<std::uint8_t> numbered_image(int height, int width, int channels) {
  std::vector<std::uint8_t> image(static_cast<std::size_t>(height * width * channels));
  for (std::size_t index = 0; index < image.size(); ++index)
    image[index] = static_cast<std::uint8_t>(1 + index % 255);
  return image;
}

std::uint8_t at(const std::vector<std::uint8_t>& image, int width, int channels, int y, int x, int channel) {
  return image[static_cast<std::size_t>((y * width + x) * channels + channel)];
}

std::vector<std::uint8_t> augmented(const AugmentOptions& options, std::uint64_t seed, std::int64_t epoch,
                                    std::int64_t sample, const std::vector<std::uint8_t>& source, int height,
                                    int width, int channels) {
  std::vector<std::uint8_t> destination(source.size(), 0xAB);
  augment_image(options, seed, epoch, sample, source.data(), destination.data(), height, width, channels);
  return destination;
}

bool is_mirror(const std::vector<std::uint8_t>& output, const std::vector<std::uint8_t>& source, int height,
               int width, int channels) {
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int channel = 0; channel < channels; ++channel)
        if (at(output, width, channels, y, x, channel) !=
            at(source, width, channels, y, width - 1 - x, channel))
          return false;
  return true;
}

TEST(Augmentation, AllOffIsTheIdentity) {
  const auto source = numbered_image(7, 5, 3);
  for (std::int64_t sample = 0; sample < 20; ++sample)
    EXPECT_EQ(augmented(AugmentOptions{}, 1, 0, sample, source, 7, 5, 3), source);
}

TEST(Augmentation, FlipMirrorsExactlyAndHalfTheTime) {
  const int height = 6, width = 5, channels = 2;
  const auto source = numbered_image(height, width, channels);
  AugmentOptions options;
  options.horizontal_flip = true;
  int flipped = 0;
  const int samples = 20000;
  for (std::int64_t sample = 0; sample < samples; ++sample) {
    const auto output = augmented(options, 42, 3, sample, source, height, width, channels);
    if (is_mirror(output, source, height, width, channels)) {
      ++flipped;
    } else {
      ASSERT_EQ(output, source) << "an unflipped sample is unchanged, sample " << sample;
    }
  }
  // Binomial(20000, 0.5): standard deviation ~71, so +-400 is more than 5 sigma.
  EXPECT_NEAR(flipped, samples / 2, 400);
}

// Recovers the crop shift from an output whose source bytes are all distinct and non-zero.
TEST(Augmentation, CropWithPaddingShiftsContentAndFillsZeros) {
  const int height = 8, width = 9, channels = 1, padding = 3;
  const auto source = numbered_image(height, width, channels);
  AugmentOptions options;
  options.random_crop_padding = padding;
  std::vector<int> seen_shifts_y(2 * padding + 1, 0), seen_shifts_x(2 * padding + 1, 0);
  for (std::int64_t sample = 0; sample < 400; ++sample) {
    const auto output = augmented(options, 9, 1, sample, source, height, width, channels);
    // Find the shift from any non-zero output pixel, then check every pixel against it.
    int shift_y = 99, shift_x = 99;
    for (int y = 0; y < height && shift_y == 99; ++y)
      for (int x = 0; x < width && shift_y == 99; ++x)
        if (const std::uint8_t value = at(output, width, channels, y, x, 0); value != 0) {
          const int source_index = value - 1;
          shift_y = source_index / width - y;
          shift_x = source_index % width - x;
        }
    ASSERT_NE(shift_y, 99) << "padding 3 on 8x9 always keeps some content";
    ASSERT_LE(std::abs(shift_y), padding);
    ASSERT_LE(std::abs(shift_x), padding);
    ++seen_shifts_y[static_cast<std::size_t>(shift_y + padding)];
    ++seen_shifts_x[static_cast<std::size_t>(shift_x + padding)];
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        const int source_y = y + shift_y, source_x = x + shift_x;
        const bool inside = source_y >= 0 && source_y < height && source_x >= 0 && source_x < width;
        ASSERT_EQ(at(output, width, channels, y, x, 0),
                  inside ? at(source, width, channels, source_y, source_x, 0) : 0)
            << "sample " << sample << " y " << y << " x " << x;
      }
  }
  for (int count : seen_shifts_y) EXPECT_GT(count, 20) << "every offset in [-3, 3] occurs";
  for (int count : seen_shifts_x) EXPECT_GT(count, 20) << "every offset in [-3, 3] occurs";
}

// The zeroed pixels of a cutout form one rectangle; returns its rows and columns.
struct Rectangle {
  int top = 0, bottom = -1, left = 0, right = -1;  // inclusive; empty when bottom < top
};

Rectangle zero_rectangle(const std::vector<std::uint8_t>& output, int height, int width, int channels) {
  Rectangle box{height, -1, width, -1};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      if (at(output, width, channels, y, x, 0) == 0) {
        box.top = std::min(box.top, y);
        box.bottom = std::max(box.bottom, y);
        box.left = std::min(box.left, x);
        box.right = std::max(box.right, x);
      }
  return box;
}

TEST(Augmentation, CutoutZeroesOneClippedSquare) {
  const int height = 12, width = 10, channels = 3;
  const auto source = numbered_image(height, width, channels);
  for (const int side : {4, 5}) {
    AugmentOptions options;
    options.cutout = side;
    int full_squares = 0, clipped = 0;
    for (std::int64_t sample = 0; sample < 300; ++sample) {
      const auto output = augmented(options, 5, 0, sample, source, height, width, channels);
      const Rectangle box = zero_rectangle(output, height, width, channels);
      ASSERT_GE(box.bottom, box.top) << "a centre inside the image always zeroes something";
      const int rows = box.bottom - box.top + 1, columns = box.right - box.left + 1;
      ASSERT_LE(rows, side);
      ASSERT_LE(columns, side);
      // Shorter than the side only where the square meets a border.
      if (rows < side) {
        ASSERT_TRUE(box.top == 0 || box.bottom == height - 1) << "sample " << sample;
      }
      if (columns < side) {
        ASSERT_TRUE(box.left == 0 || box.right == width - 1) << "sample " << sample;
      }
      (rows == side && columns == side) ? ++full_squares : ++clipped;
      for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
          for (int channel = 0; channel < channels; ++channel) {
            const bool cut = y >= box.top && y <= box.bottom && x >= box.left && x <= box.right;
            ASSERT_EQ(at(output, width, channels, y, x, channel),
                      cut ? 0 : at(source, width, channels, y, x, channel))
                << "side " << side << " sample " << sample;
          }
    }
    EXPECT_GT(full_squares, 0) << "side " << side;
    EXPECT_GT(clipped, 0) << "side " << side;
  }
}

// Random erasing alone: with probability p one rectangle within torchvision's limits (height and
// width below the image's, area and aspect ratio in range up to the rounding of each side) is
// zeroed, and nothing else changes.
TEST(Augmentation, RandomErasingZeroesOneRectangleWithinTheRanges) {
  const int height = 24, width = 24, channels = 3;
  const auto source = numbered_image(height, width, channels);
  AugmentOptions options;
  options.random_erasing = RandomErasingOptions{0.5, 0.05, 0.4, 0.5, 2.0};
  int erased = 0, touching_an_edge = 0;
  const int samples = 4000;
  for (std::int64_t sample = 0; sample < samples; ++sample) {
    const auto output = augmented(options, 9, 1, sample, source, height, width, channels);
    const Rectangle box = zero_rectangle(output, height, width, channels);
    if (box.bottom < box.top) {
      ASSERT_EQ(output, source) << "sample " << sample;
      continue;
    }
    ++erased;
    const int rows = box.bottom - box.top + 1, columns = box.right - box.left + 1;
    ASSERT_LT(rows, height);
    ASSERT_LT(columns, width);
    // Each side is the rounding of sqrt(area * ratio) or sqrt(area / ratio): off by at most 1/2.
    const double area_fraction = static_cast<double>(rows) * columns / (height * width);
    ASSERT_GE((rows + 0.5) * (columns + 0.5) / (height * width), 0.05) << "sample " << sample;
    ASSERT_LE((rows - 0.5) * (columns - 0.5) / (height * width), 0.4) << "sample " << sample;
    ASSERT_GT(area_fraction, 0.0);
    ASSERT_GE((rows + 0.5) / (columns - 0.5), 0.5) << "sample " << sample;
    ASSERT_LE((rows - 0.5) / (columns + 0.5), 2.0) << "sample " << sample;
    touching_an_edge += box.top == 0 || box.left == 0 || box.bottom == height - 1 || box.right == width - 1;
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        for (int channel = 0; channel < channels; ++channel) {
          const bool inside = y >= box.top && y <= box.bottom && x >= box.left && x <= box.right;
          ASSERT_EQ(at(output, width, channels, y, x, channel),
                    inside ? 0 : at(source, width, channels, y, x, channel))
              << "sample " << sample;
        }
    const EraseRectangle drawn = erase_draws(options.random_erasing, 9, 1, sample, height, width);
    ASSERT_EQ(drawn.top, box.top);
    ASSERT_EQ(drawn.left, box.left);
    ASSERT_EQ(drawn.height, rows);
    ASSERT_EQ(drawn.width, columns);
  }
  // Binomial(4000, 0.5) (every try fits here: the longest side, area 0.4 at ratio 2, is 21 of 24):
  // standard deviation ~32, so +-200 is more than 6 sigma.
  EXPECT_NEAR(erased, samples / 2, 200);
  EXPECT_GT(touching_an_edge, 0) << "the corner is uniform over every position, edges included";
}

// torchvision falls back to the unchanged image when no try fits; so must the draws. A square image
// with scale [1, 1] and ratio [1, 1] asks for the whole image, which never fits (h < height fails).
TEST(Augmentation, RandomErasingThatNeverFitsLeavesTheImage) {
  const int height = 8, width = 8, channels = 1;
  const auto source = numbered_image(height, width, channels);
  AugmentOptions options;
  options.random_erasing = RandomErasingOptions{1.0, 1.0, 1.0, 1.0, 1.0};
  for (std::int64_t sample = 0; sample < 50; ++sample) {
    EXPECT_EQ(augmented(options, 2, 0, sample, source, height, width, channels), source);
    EXPECT_EQ(erase_draws(options.random_erasing, 2, 0, sample, height, width).height, 0);
  }
  // With p = 1 and a range that fits, every sample is erased.
  options.random_erasing = RandomErasingOptions{1.0, 0.1, 0.2, 1.0, 1.0};
  for (std::int64_t sample = 0; sample < 50; ++sample)
    EXPECT_GT(erase_draws(options.random_erasing, 2, 0, sample, height, width).height, 0) << sample;
}

// Erasing draws from a stream of its own: turning it on keeps the crop, flip and cutout, and the
// rectangle it draws is the same whichever other steps are on.
TEST(Augmentation, RandomErasingKeepsTheOtherStepsChoices) {
  const int height = 16, width = 12;
  AugmentOptions without{3, true, 5, {}, {}, {}};
  AugmentOptions with = without;
  with.random_erasing = RandomErasingOptions{0.7, 0.02, 0.33, 0.3, 3.3};
  AugmentOptions erasing_only;
  erasing_only.random_erasing = with.random_erasing;
  int erased = 0;
  for (std::int64_t sample = 0; sample < 200; ++sample) {
    const AugmentDraws before = augment_draws(without, 5, 4, sample, height, width);
    const AugmentDraws after = augment_draws(with, 5, 4, sample, height, width);
    const AugmentDraws alone = augment_draws(erasing_only, 5, 4, sample, height, width);
    ASSERT_EQ(after.shift_y, before.shift_y);
    ASSERT_EQ(after.shift_x, before.shift_x);
    ASSERT_EQ(after.flip, before.flip);
    ASSERT_EQ(after.cutout_top, before.cutout_top);
    ASSERT_EQ(after.cutout_left, before.cutout_left);
    ASSERT_EQ(before.erase_height, 0);
    ASSERT_EQ(after.erase_top, alone.erase_top);
    ASSERT_EQ(after.erase_left, alone.erase_left);
    ASSERT_EQ(after.erase_height, alone.erase_height);
    ASSERT_EQ(after.erase_width, alone.erase_width);
    erased += after.erase_height > 0;
  }
  EXPECT_GT(erased, 100);
  EXPECT_LT(erased, 180);
}

TEST(Augmentation, ChoicesArePureFunctionsOfSeedEpochAndSample) {
  const int height = 28, width = 28, channels = 1;
  const auto source = numbered_image(height, width, channels);
  const AugmentOptions options{4, true, 8, {}, {}, {}};
  int epochs_differ = 0, samples_differ = 0, seeds_differ = 0;
  for (std::int64_t sample = 0; sample < 50; ++sample) {
    const auto first = augmented(options, 11, 2, sample, source, height, width, channels);
    EXPECT_EQ(augmented(options, 11, 2, sample, source, height, width, channels), first);
    epochs_differ += augmented(options, 11, 3, sample, source, height, width, channels) != first;
    samples_differ += augmented(options, 11, 2, sample + 1000, source, height, width, channels) != first;
    seeds_differ += augmented(options, 12, 2, sample, source, height, width, channels) != first;
  }
  // The same image under independent draws coincides rarely (all five choices must agree).
  EXPECT_GE(epochs_differ, 45);
  EXPECT_GE(samples_differ, 45);
  EXPECT_GE(seeds_differ, 45);
}

TEST(Augmentation, EnablingOneStepKeepsTheOthersChoices) {
  const int height = 10, width = 10, channels = 1;
  const auto source = numbered_image(height, width, channels);
  const AugmentOptions flip_only{0, true, 0, {}, {}, {}};
  const AugmentOptions flip_and_cutout{0, true, 3, {}, {}, {}};
  for (std::int64_t sample = 0; sample < 100; ++sample) {
    const auto flipped = augmented(flip_only, 3, 0, sample, source, height, width, channels);
    const auto with_cutout = augmented(flip_and_cutout, 3, 0, sample, source, height, width, channels);
    // Outside the cutout square the two agree: the flip drew the same word.
    for (std::size_t index = 0; index < flipped.size(); ++index)
      if (with_cutout[index] != 0) {
        ASSERT_EQ(with_cutout[index], flipped[index]) << "sample " << sample;
      }
  }
}

// Crop and flip together: the result is the crop-only result (same draws), mirrored or not.
TEST(Augmentation, FlipAppliesToTheCroppedImage) {
  for (const int channels : {1, 3}) {
    const int height = 7, width = 9;
    const auto source = numbered_image(height, width, channels);
    int mirrored = 0;
    for (std::int64_t sample = 0; sample < 200; ++sample) {
      const auto cropped =
          augmented(AugmentOptions{3, false, 0, {}, {}, {}}, 4, 1, sample, source, height, width, channels);
      const auto both =
          augmented(AugmentOptions{3, true, 0, {}, {}, {}}, 4, 1, sample, source, height, width, channels);
      if (both == cropped && !is_mirror(both, cropped, height, width, channels)) continue;
      ASSERT_TRUE(is_mirror(both, cropped, height, width, channels))
          << "channels " << channels << " sample " << sample;
      ++mirrored;
    }
    EXPECT_GT(mirrored, 60) << "channels " << channels;
    EXPECT_LT(mirrored, 140) << "channels " << channels;
  }
}

TEST(Augmentation, RejectsOverlappingBuffers) {
  std::vector<std::uint8_t> image(16, 1);
  EXPECT_THROW(augment_image(AugmentOptions{1, false, 0, {}, {}, {}}, 0, 0, 0, image.data(), image.data() + 4,
                             2, 2, 2),
               Error);
}

std::shared_ptr<const Split> test_split(std::int64_t count) {
  return std::make_shared<Split>(phalanx::testing::make_split("train", count, 6, 5, 3, 10, 8));
}

TEST(Augmentation, LoaderWithAugmentationOffDeliversTheSplitBytes) {
  const auto split = test_split(40);
  const ShardPlan plan(40, 4, 1, 2, 21);
  Loader plain(split, plan, 2, 0, 0, 2, HostAllocator::instance());
  Loader explicitly_off(split, plan, 2, 0, 0, 2, HostAllocator::instance(), AugmentOptions{});
  const auto image_bytes = static_cast<std::size_t>(split->image_bytes());
  for (std::int64_t epoch = 0; epoch < 2; ++epoch)
    for (std::int64_t step = 0; step < plan.steps_per_epoch(); ++step) {
      const Batch* first = plain.next();
      const Batch* second = explicitly_off.next();
      ASSERT_NE(first, nullptr);
      ASSERT_NE(second, nullptr);
      auto order = plan.epoch_order(epoch);
      const std::vector<std::int64_t> indices = plan.rank_indices(order, step);
      for (std::size_t position = 0; position < indices.size(); ++position) {
        const std::uint8_t* expected =
            split->images.data() + static_cast<std::size_t>(indices[position]) * image_bytes;
        ASSERT_EQ(std::memcmp(first->images + position * image_bytes, expected, image_bytes), 0);
        ASSERT_EQ(std::memcmp(second->images + position * image_bytes, expected, image_bytes), 0);
      }
    }
  EXPECT_EQ(plain.next(), nullptr);
  EXPECT_EQ(explicitly_off.next(), nullptr);
}

// Every rank of any world size, and a resumed loader, sees the augmentation of augment_image for
// (plan seed, epoch, sample index) — which is what makes it independent of ranks and resume.
TEST(Augmentation, LoaderAppliesThePerSampleAugmentation) {
  const auto split = test_split(48);
  const AugmentOptions options{2, true, 3, {}, {}, {}};
  const auto image_bytes = static_cast<std::size_t>(split->image_bytes());
  std::int64_t changed = 0, total = 0;
  for (const int world_size : {1, 3}) {
    for (int rank = 0; rank < world_size; ++rank) {
      const ShardPlan plan(48, 4, rank, world_size, 21);
      for (const std::int64_t first_step : {std::int64_t{0}, std::int64_t{1}}) {
        Loader loader(split, plan, 2, 1, first_step, 3, HostAllocator::instance(), options);
        for (std::int64_t epoch = 1; epoch < 3; ++epoch)
          for (std::int64_t step = epoch == 1 ? first_step : 0; step < plan.steps_per_epoch(); ++step) {
            const Batch* batch = loader.next();
            ASSERT_NE(batch, nullptr);
            auto order = plan.epoch_order(epoch);
            const std::vector<std::int64_t> indices = plan.rank_indices(order, step);
            for (std::size_t position = 0; position < indices.size(); ++position) {
              const std::uint8_t* source =
                  split->images.data() + static_cast<std::size_t>(indices[position]) * image_bytes;
              std::vector<std::uint8_t> expected(image_bytes);
              augment_image(options, 21, epoch, indices[position], source, expected.data(), split->height,
                            split->width, split->channels);
              ASSERT_EQ(std::memcmp(batch->images + position * image_bytes, expected.data(), image_bytes), 0)
                  << "world " << world_size << " rank " << rank << " epoch " << epoch << " step " << step;
              EXPECT_EQ(batch->labels[position], split->labels[static_cast<std::size_t>(indices[position])]);
              changed += std::memcmp(expected.data(), source, image_bytes) != 0;
              ++total;
            }
          }
        EXPECT_EQ(loader.next(), nullptr);
      }
    }
  }
  EXPECT_GT(changed, total * 9 / 10) << "almost every sample is altered with these options";
}

}  // namespace
}  // namespace phalanx::data
