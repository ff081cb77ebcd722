// InputBatch with augmentation left to the device: a loader that only draws, plus
// Backend::augment_normalize_images, must give the same input bits as a loader that augments
// in its thread followed by plain normalisation — the promise that GPU and CPU ranks train on the
// same images. Run here on the CPU backend (its op is the reference the CUDA kernel is compared
// with in the parity tests).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/data/loader.hpp"
#include "loop/input_batch.hpp"

namespace phalanx::train {
namespace {

std::shared_ptr<const data::Split> random_split(std::int64_t count, int height, int width, int channels) {
  auto split = std::make_shared<data::Split>();
  split->name = "train";
  split->count = count;
  split->height = height;
  split->width = width;
  split->channels = channels;
  RandomStream random(7, 11);
  split->images.resize(static_cast<std::size_t>(count * split->image_bytes()));
  // Never zero, so a pixel the crop or cutout zeroed is told apart from a copied one.
  for (auto& byte : split->images) byte = static_cast<std::uint8_t>(1 + random.next_below(255));
  for (std::int64_t sample = 0; sample < count; ++sample)
    split->labels.push_back(static_cast<std::int32_t>(sample % 10));
  return split;
}

std::vector<float> download(backend::Backend& backend, const Tensor& tensor) {
  std::vector<float> host(static_cast<std::size_t>(tensor.elements()));
  backend.copy_to_host(host.data(), tensor.data(), tensor.bytes());
  backend.synchronize();
  return host;
}

struct Case {
  int height, width, channels;
  data::AugmentOptions options;
};

TEST(InputBatch, DeviceAugmentationGivesTheLoaderThreadsBits) {
  auto backend = backend::make_cpu_backend(1);
  using enum data::AutoAugmentPolicy;
  const Case cases[] = {
      {28, 28, 1, {4, true, 0, {}, {}, {}}},
      {28, 28, 1, {0, false, 8, {}, {}, {}}},
      {9, 7, 3, {3, true, 5, {}, {}, {}}},
      {32, 32, 3, {4, true, 16, {}, {}, {}}},
      {6, 6, 3, {0, true, 0, {}, {}, {}}},
      {5, 11, 2, {6, false, 4, {}, {}, {}}},
      {32, 32, 3, {4, true, 0, {0.5, 0.02, 0.33, 0.3, 3.3}, {}, {}}},
      {12, 9, 1, {0, false, 3, {1.0, 0.1, 0.5, 0.5, 2.0}, {}, {}}},
      // TrivialAugmentWide and RandAugment: their ops between the crop and flip and the cutout.
      {28, 28, 1, {4, true, 0, {}, {TrivialAugmentWide, 2, 9, 31}, {}}},
      {32, 32, 3, {4, true, 8, {0.5, 0.02, 0.33, 0.3, 3.3}, {RandAugment, 3, 14, 31}, {}}},
      {12, 9, 3, {0, false, 3, {}, {RandAugment, 4, 30, 31}, {}}},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(::testing::Message()
                 << test.height << "x" << test.width << "x" << test.channels << " padding "
                 << test.options.random_crop_padding << " flip " << test.options.horizontal_flip << " cutout "
                 << test.options.cutout << " erasing " << test.options.random_erasing.probability);
    const auto split = random_split(37, test.height, test.width, test.channels);
    const data::ShardPlan plan(split->count, 8, 0, 1, 99);
    data::Loader in_thread(split, plan, 2, 0, 0, 2, HostAllocator::instance(), test.options, false);
    data::Loader on_device(split, plan, 2, 0, 0, 2, HostAllocator::instance(), test.options, true);
    const std::vector<float> mean(static_cast<std::size_t>(test.channels), 0.3f);
    const std::vector<float> deviation(static_cast<std::size_t>(test.channels), 0.27f);
    InputBatch reference(*backend, 8, test.height, test.width, test.channels, mean, deviation);
    InputBatch fused(*backend, 8, test.height, test.width, test.channels, mean, deviation);
    int batches = 0;
    std::int64_t differing_from_plain = 0, samples = 0;
    while (const data::Batch* expected = in_thread.next()) {
      const data::Batch* drawn = on_device.next();
      ASSERT_NE(drawn, nullptr);
      ASSERT_EQ(expected->augment_draws, nullptr);
      ASSERT_NE(drawn->augment_draws, nullptr);
      ASSERT_EQ(drawn->size, expected->size);
      reference.load(expected->images, expected->labels, expected->size);
      fused.load(drawn->images, drawn->labels, drawn->size, drawn->augment_draws, test.options.cutout,
                 test.options.auto_augment.enabled());
      const auto reference_values = download(*backend, reference.input());
      const auto fused_values = download(*backend, fused.input());
      ASSERT_EQ(reference_values.size(), fused_values.size());
      EXPECT_EQ(
          std::memcmp(reference_values.data(), fused_values.data(), fused_values.size() * sizeof(float)), 0)
          << "epoch " << drawn->epoch << " step " << drawn->step;
      // The device path shipped plain bytes, and the augmentation changed them (the flip alone
      // changes half of the samples, the other options nearly all).
      const auto image_bytes = static_cast<std::size_t>(split->image_bytes());
      for (int sample = 0; sample < drawn->size; ++sample)
        differing_from_plain += std::memcmp(drawn->images + sample * image_bytes,
                                            expected->images + sample * image_bytes, image_bytes) != 0;
      samples += drawn->size;
      ++batches;
    }
    EXPECT_EQ(on_device.next(), nullptr);
    EXPECT_EQ(batches, 2 * plan.steps_per_epoch());
    EXPECT_GT(differing_from_plain, samples * 3 / 10);
  }
}

TEST(InputBatch, DevicePlacementWithAugmentationOffShipsNoDraws) {
  auto backend = backend::make_cpu_backend(1);
  const auto split = random_split(16, 4, 4, 1);
  const data::ShardPlan plan(split->count, 4, 0, 1, 5);
  data::Loader loader(split, plan, 1, 0, 0, 1, HostAllocator::instance(), data::AugmentOptions{}, true);
  const data::Batch* batch = loader.next();
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(batch->augment_draws, nullptr);
}

}  // namespace
}  // namespace phalanx::train
