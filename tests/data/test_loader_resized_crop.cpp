// The Loader with RandomResizedCrop: its batches hold training-size images, each the bilinear
// resample of the window random_resized_crop_window draws for (seed, epoch, sample index), then the
// other steps on the training-size image; on a GPU rank the crop is still the loader's and the
// other steps' draws are of the training size. Every rank, world size and resume point agrees.
#include <cstring>
#include <memory>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/loader.hpp"
#include "phalanx/data/resized_crop.hpp"

namespace phalanx::data {
namespace {

constexpr int stored_height = 20, stored_width = 24, channels = 3, size = 12;
constexpr std::uint64_t seed = 31;

std::shared_ptr<const Split> stored_split(std::int64_t count) {
  return std::make_shared<Split>(
      phalanx::testing::make_split("train", count, stored_height, stored_width, channels, 5, 9));
}

AugmentOptions resized_crop_options() {
  AugmentOptions options;
  options.random_resized_crop = ResizedCropOptions{size, ResizedCropRanges{0.25, 1.0, 0.5, 2.0}};
  return options;
}

// The crop alone: what the loader's batch must hold for sample `index` of `epoch`.
std::vector<std::uint8_t> expected_crop(const AugmentOptions& options, const Split& split, std::int64_t epoch,
                                        std::int64_t index) {
  const ResampleWindow window = random_resized_crop_window(options.random_resized_crop.ranges, seed, epoch,
                                                           index, split.height, split.width, size, size);
  std::vector<std::uint8_t> crop(static_cast<std::size_t>(size) * size * channels);
  resample_bilinear(window, split.images.data() + index * split.image_bytes(), split.height, split.width,
                    split.channels, crop.data(), size, size);
  return crop;
}

// Runs a loader over epochs [1, 3) from `first_step` and checks each sample with `check`.
template <typename Check>
void for_each_sample(const std::shared_ptr<const Split>& split, const AugmentOptions& options, bool on_device,
                     int rank, int world_size, std::int64_t first_step, Check check) {
  const ShardPlan plan(split->count, 4, rank, world_size, seed);
  Loader loader(split, plan, 2, 1, first_step, 3, HostAllocator::instance(), options, on_device);
  ASSERT_EQ(loader.image_height(), size);
  ASSERT_EQ(loader.image_width(), size);
  for (std::int64_t epoch = 1; epoch < 3; ++epoch) {
    EpochOrder order = plan.epoch_order(epoch);
    for (std::int64_t step = epoch == 1 ? first_step : 0; step < plan.steps_per_epoch(); ++step) {
      const Batch* batch = loader.next();
      ASSERT_NE(batch, nullptr);
      const std::vector<std::int64_t> indices = plan.rank_indices(order, step);
      for (std::size_t position = 0; position < indices.size(); ++position) {
        EXPECT_EQ(batch->labels[position], split->labels[static_cast<std::size_t>(indices[position])]);
        check(*batch, position, epoch, indices[position]);
      }
    }
  }
  EXPECT_EQ(loader.next(), nullptr);
}

constexpr std::size_t crop_bytes = static_cast<std::size_t>(size) * size * channels;

TEST(LoaderResizedCrop, BatchesAreTheResampledWindowsAtTheTrainingSize) {
  const auto split = stored_split(40);
  const AugmentOptions options = resized_crop_options();
  std::int64_t differing_windows = 0, samples = 0;
  ResampleWindow first_window;
  for (const int world_size : {1, 3})
    for (int rank = 0; rank < world_size; ++rank)
      for (const std::int64_t first_step : {std::int64_t{0}, std::int64_t{2}})
        for (const bool on_device : {false, true})
          for_each_sample(
              split, options, on_device, rank, world_size, first_step,
              [&](const Batch& batch, std::size_t position, std::int64_t epoch, std::int64_t index) {
                EXPECT_EQ(batch.augment_draws, nullptr) << "nothing left for the device";
                const std::vector<std::uint8_t> expected = expected_crop(options, *split, epoch, index);
                ASSERT_EQ(std::memcmp(batch.images + position * crop_bytes, expected.data(), crop_bytes), 0)
                    << "epoch " << epoch << " sample " << index;
                const ResampleWindow window =
                    random_resized_crop_window(options.random_resized_crop.ranges, seed, epoch, index,
                                               stored_height, stored_width, size, size);
                if (samples == 0) first_window = window;
                differing_windows += window.height != first_window.height || window.top != first_window.top ||
                                     window.left != first_window.left;
                ++samples;
              });
  EXPECT_GT(differing_windows, samples / 2) << "the windows vary from sample to sample";
}

TEST(LoaderResizedCrop, TheOtherStepsFollowTheCropOnTheHost) {
  const auto split = stored_split(24);
  AugmentOptions options = resized_crop_options();
  options.horizontal_flip = true;
  options.cutout = 4;
  options.random_erasing = RandomErasingOptions{0.5, 0.02, 0.2, 0.3, 3.3};
  options.auto_augment = AutoAugmentOptions{AutoAugmentPolicy::TrivialAugmentWide, 0, 9, 31};
  for (const int world_size : {1, 2})
    for (int rank = 0; rank < world_size; ++rank)
      for_each_sample(
          split, options, false, rank, world_size, 1,
          [&](const Batch& batch, std::size_t position, std::int64_t epoch, std::int64_t index) {
            const std::vector<std::uint8_t> crop = expected_crop(options, *split, epoch, index);
            std::vector<std::uint8_t> expected(crop_bytes);
            augment_image(options, seed, epoch, index, crop.data(), expected.data(), size, size, channels);
            ASSERT_EQ(std::memcmp(batch.images + position * crop_bytes, expected.data(), crop_bytes), 0)
                << "epoch " << epoch << " sample " << index;
          });
}

TEST(LoaderResizedCrop, AGpuRankGetsTheCropAndTheDrawsOfTheTrainingSize) {
  const auto split = stored_split(24);
  AugmentOptions options = resized_crop_options();
  options.horizontal_flip = true;
  options.random_erasing = RandomErasingOptions{0.5, 0.02, 0.2, 0.3, 3.3};
  for_each_sample(
      split, options, true, 0, 1, 0,
      [&](const Batch& batch, std::size_t position, std::int64_t epoch, std::int64_t index) {
        ASSERT_NE(batch.augment_draws, nullptr);
        const std::vector<std::uint8_t> crop = expected_crop(options, *split, epoch, index);
        ASSERT_EQ(std::memcmp(batch.images + position * crop_bytes, crop.data(), crop_bytes), 0);
        const AugmentDraws expected = augment_draws(options, seed, epoch, index, size, size);
        ASSERT_EQ(std::memcmp(&batch.augment_draws[position], &expected, sizeof(AugmentDraws)), 0);
        // Applying those draws to the crop gives the host path's bytes.
        std::vector<std::uint8_t> applied(crop_bytes), on_host(crop_bytes);
        apply_augment_draws(batch.augment_draws[position], options.cutout, crop.data(), applied.data(), size,
                            size, channels);
        augment_image(options, seed, epoch, index, crop.data(), on_host.data(), size, size, channels);
        ASSERT_EQ(applied, on_host);
      });
}

TEST(LoaderResizedCrop, WithoutTheCropTheBatchKeepsTheStoredSize) {
  const auto split = stored_split(16);
  const ShardPlan plan(16, 4, 0, 1, seed);
  Loader loader(split, plan, 1, 0, 0, 1, HostAllocator::instance());
  EXPECT_EQ(loader.image_height(), stored_height);
  EXPECT_EQ(loader.image_width(), stored_width);
}

}  // namespace
}  // namespace phalanx::data
