// TrivialAugmentWide's and RandAugment's draws: a pure function of (seed, epoch, sample index),
// spread over every op and bin, leaving the other augmentations' draws alone; and the op order in
// augment_image (after the crop and flip, before cutout).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "phalanx/data/augmentation.hpp"
#include "phalanx/data/auto_augment.hpp"

namespace phalanx::data {
namespace {

bool same(const AugmentOperationDraw& left, const AugmentOperationDraw& right) {
  return std::memcmp(&left, &right, sizeof(AugmentOperationDraw)) == 0;
}

AutoAugmentOptions trivial() {
  return {AutoAugmentPolicy::TrivialAugmentWide, 2, 9, 31};
}

TEST(AutoAugment, DrawsArePureFunctionsOfSeedEpochAndIndex) {
  for (const AutoAugmentOptions& options :
       {trivial(), AutoAugmentOptions{AutoAugmentPolicy::RandAugment, 3, 9, 31}}) {
    int differ_by_epoch = 0, differ_by_index = 0, differ_by_seed = 0;
    for (std::int64_t sample = 0; sample < 200; ++sample) {
      AugmentOperationDraw first[max_augment_operations], again[max_augment_operations],
          next_epoch[max_augment_operations], next_index[max_augment_operations],
          other_seed[max_augment_operations];
      auto_augment_draws(options, 7, 3, sample, 28, 28, first);
      auto_augment_draws(options, 7, 3, sample, 28, 28, again);
      auto_augment_draws(options, 7, 4, sample, 28, 28, next_epoch);
      auto_augment_draws(options, 7, 3, sample + 1, 28, 28, next_index);
      auto_augment_draws(options, 8, 3, sample, 28, 28, other_seed);
      bool epoch_differs = false, index_differs = false, seed_differs = false;
      for (int slot = 0; slot < max_augment_operations; ++slot) {
        EXPECT_TRUE(same(first[slot], again[slot])) << "sample " << sample << " slot " << slot;
        epoch_differs |= !same(first[slot], next_epoch[slot]);
        index_differs |= !same(first[slot], next_index[slot]);
        seed_differs |= !same(first[slot], other_seed[slot]);
      }
      differ_by_epoch += epoch_differs;
      differ_by_index += index_differs;
      differ_by_seed += seed_differs;
    }
    // Two samples' ops coincide by chance (same op, bin and sign) a few times in a hundred.
    EXPECT_GT(differ_by_epoch, 170);
    EXPECT_GT(differ_by_index, 170);
    EXPECT_GT(differ_by_seed, 170);
  }
}

TEST(AutoAugment, TrivialAugmentDrawsOneOpOverEveryOpAndBin) {
  std::set<std::int32_t> operations;
  std::set<float> brightness_factors;
  int negative = 0, signed_ops = 0;
  for (std::int64_t sample = 0; sample < 4000; ++sample) {
    AugmentOperationDraw draws[max_augment_operations];
    auto_augment_draws(trivial(), 11, 0, sample, 28, 28, draws);
    for (int slot = 1; slot < max_augment_operations; ++slot) EXPECT_EQ(draws[slot].operation, 0);
    operations.insert(draws[0].operation);
    if (draws[0].operation == static_cast<std::int32_t>(AugmentOperation::Brightness)) {
      brightness_factors.insert(draws[0].parameters[0]);
      ++signed_ops;
      negative += draws[0].parameters[0] < 1.0f;
    }
  }
  EXPECT_EQ(operations.size(), static_cast<std::size_t>(augment_operation_count));
  // 31 bins, both signs, bin 0 the same either way: 61 factors, nearly all seen in ~285 draws.
  EXPECT_GT(brightness_factors.size(), 50U);
  EXPECT_NEAR(negative, signed_ops / 2, signed_ops / 5);
}

TEST(AutoAugment, RandAugmentUsesItsMagnitudeBinForEveryOp) {
  const AutoAugmentOptions options{AutoAugmentPolicy::RandAugment, 3, 12, 31};
  for (std::int64_t sample = 0; sample < 300; ++sample) {
    AugmentOperationDraw draws[max_augment_operations];
    auto_augment_draws(options, 5, 2, sample, 28, 28, draws);
    EXPECT_EQ(draws[3].operation, 0);
    for (int slot = 0; slot < 3; ++slot) {
      const auto operation = static_cast<AugmentOperation>(draws[slot].operation);
      if (operation == AugmentOperation::Brightness || operation == AugmentOperation::Contrast) {
        // linspace(0, 0.9, 31)[12] = 0.36: factor 1.36 or 0.64.
        const double factor = draws[slot].parameters[0];
        EXPECT_TRUE(std::abs(factor - 1.36) < 1e-6 || std::abs(factor - 0.64) < 1e-6) << factor;
      }
      if (operation == AugmentOperation::Posterize) {
        EXPECT_EQ(draws[slot].parameters[0], 6.0f);  // 8 - round(12 / 7.5)
      }
      if (operation == AugmentOperation::Solarize) {
        EXPECT_NEAR(draws[slot].parameters[0], 255.0 - 12 * 8.5, 1e-4);
      }
    }
  }
}

TEST(AutoAugment, TurningItOnLeavesTheOtherDrawsAlone) {
  AugmentOptions without{4, true, 6, {0.5, 0.02, 0.33, 0.3, 3.3}, {}, {}};
  AugmentOptions with = without;
  with.auto_augment = trivial();
  for (std::int64_t sample = 0; sample < 100; ++sample) {
    const AugmentDraws before = augment_draws(without, 3, 1, sample, 28, 28);
    const AugmentDraws after = augment_draws(with, 3, 1, sample, 28, 28);
    EXPECT_EQ(std::memcmp(&before, &after, 9 * sizeof(std::int32_t)), 0) << sample;
    for (const AugmentOperationDraw& operation : before.operations) EXPECT_EQ(operation.operation, 0);
  }
}

// Solarize at threshold 0 maps every byte x to 255 - x: the crop's zero padding becomes 255 (the
// op runs after the crop) and the cutout square stays 0 (cutout runs after the op).
TEST(AutoAugment, OpsRunAfterTheCropAndBeforeCutout) {
  const int height = 6, width = 5, channels = 2;
  std::vector<std::uint8_t> source(height * width * channels);
  for (std::size_t index = 0; index < source.size(); ++index)
    source[index] = static_cast<std::uint8_t>(10 + index);
  AugmentDraws draws;
  draws.shift_y = -2;  // output rows 0 and 1 come from the padding
  draws.cutout_top = 3;
  draws.cutout_left = 1;
  draws.operations[0] = resolve_augment_operation(AugmentOperation::Solarize, 0.0, height, width);
  std::vector<std::uint8_t> output(source.size());
  apply_augment_draws(draws, 2, source.data(), output.data(), height, width, channels);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int channel = 0; channel < channels; ++channel) {
        const std::size_t index = (static_cast<std::size_t>(y) * width + x) * channels + channel;
        const bool in_cutout = y >= 3 && y < 5 && x >= 1 && x < 3;
        const int expected =
            in_cutout ? 0
            : y < 2   ? 255
                      : 255 - source[(static_cast<std::size_t>(y - 2) * width + x) * channels + channel];
        EXPECT_EQ(output[index], expected) << y << "," << x << "," << channel;
      }
    }
  }
}

TEST(AutoAugment, AugmentImageAppliesItsDraws) {
  AugmentOptions options{2, true, 0, {}, {AutoAugmentPolicy::RandAugment, 2, 20, 31}, {}};
  const int height = 12, width = 10, channels = 3;
  std::vector<std::uint8_t> source(height * width * channels);
  for (std::size_t index = 0; index < source.size(); ++index)
    source[index] = static_cast<std::uint8_t>((index * 37 + 5) % 256);
  int changed_by_ops = 0;
  for (std::int64_t sample = 0; sample < 50; ++sample) {
    std::vector<std::uint8_t> whole(source.size()), by_draws(source.size()), crop_only(source.size());
    augment_image(options, 9, 0, sample, source.data(), whole.data(), height, width, channels);
    AugmentDraws draws = augment_draws(options, 9, 0, sample, height, width);
    apply_augment_draws(draws, 0, source.data(), by_draws.data(), height, width, channels);
    EXPECT_EQ(whole, by_draws) << sample;
    for (AugmentOperationDraw& operation : draws.operations) operation = AugmentOperationDraw{};
    apply_augment_draws(draws, 0, source.data(), crop_only.data(), height, width, channels);
    changed_by_ops += whole != crop_only;
  }
  // Two ops of which only Identity leaves the image as it is.
  EXPECT_GT(changed_by_ops, 40);
}

}  // namespace
}  // namespace phalanx::data
