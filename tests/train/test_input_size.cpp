// The model's input size with and without data.augment.random_resized_crop, and evaluation's
// resize + centre crop of the stored images to it: each evaluated image is resample_bilinear of
// center_crop_window (torchvision's Resize(eval_resize) then CenterCrop(size)), labels kept.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "config/expect_input_error.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/data/resized_crop.hpp"
#include "phalanx/train/input_size.hpp"

namespace phalanx::train {
namespace {

data::Split stored_split(std::int64_t count, int height, int width, int channels) {
  data::Split split;
  split.name = "test";
  split.count = count;
  split.height = height;
  split.width = width;
  split.channels = channels;
  RandomStream random(3, 17);
  split.images.resize(static_cast<std::size_t>(count * split.image_bytes()));
  for (auto& byte : split.images) byte = static_cast<std::uint8_t>(random.next_below(256));
  for (std::int64_t sample = 0; sample < count; ++sample)
    split.labels.push_back(static_cast<std::int32_t>((sample * 7) % 10));
  return split;
}

config::DataConfig with_crop(int size, int eval_resize) {
  config::DataConfig data;
  data.augment.random_resized_crop = config::RandomResizedCropConfig{size};
  data.eval_resize = eval_resize;
  return data;
}

TEST(InputSize, TheTrainingSizeReplacesTheStoredOne) {
  EXPECT_EQ(model_sample_shape(config::DataConfig{}, 28, 30, 1, "d.h5"), (Shape{28, 30, 1}));
  EXPECT_EQ(model_sample_shape(with_crop(24, 0), 28, 30, 3, "d.h5"), (Shape{24, 24, 3}));
  EXPECT_EQ(model_sample_shape(with_crop(28, 0), 28, 30, 3, "d.h5"), (Shape{28, 28, 3}));
  phalanx::testing::expect_input_error([] { model_sample_shape(with_crop(29, 0), 28, 30, 1, "d.h5"); },
                                       {"data.augment.random_resized_crop.size: 29 is larger than the 28x30 "
                                        "images of d.h5"});
}

TEST(InputSize, EvaluationResizesAndCentreCropsToTheTrainingSize) {
  for (const auto& [eval_resize, expected_resize] :
       {std::pair{0, 20}, std::pair{23, 23}, std::pair{12, 12}}) {
    SCOPED_TRACE(eval_resize);
    const data::Split stored = stored_split(9, 20, 26, 3);
    const data::Split cropped = evaluation_input(with_crop(12, eval_resize), stored);
    ASSERT_EQ(cropped.count, stored.count);
    ASSERT_EQ(cropped.height, 12);
    ASSERT_EQ(cropped.width, 12);
    ASSERT_EQ(cropped.channels, 3);
    EXPECT_EQ(cropped.labels, stored.labels);
    const data::ResampleWindow window = data::center_crop_window(20, 26, expected_resize, 12, 12);
    EXPECT_EQ(window.resized_height, expected_resize);
    std::vector<std::uint8_t> expected(static_cast<std::size_t>(cropped.image_bytes()));
    for (std::int64_t sample = 0; sample < stored.count; ++sample) {
      data::resample_bilinear(window, stored.images.data() + sample * stored.image_bytes(), 20, 26, 3,
                              expected.data(), 12, 12);
      EXPECT_EQ(std::memcmp(cropped.images.data() + sample * cropped.image_bytes(), expected.data(),
                            expected.size()),
                0)
          << "sample " << sample;
    }
  }
  // No resize (eval_resize left out, square stored images of the training size's side + 4): the
  // centre crop is a plain copy of the middle.
  const data::Split square = stored_split(3, 16, 16, 1);
  const data::Split middle = evaluation_input(with_crop(12, 0), square);
  for (int y = 0; y < 12; ++y)
    for (int x = 0; x < 12; ++x)
      ASSERT_EQ(middle.images[static_cast<std::size_t>(144 + y * 12 + x)],
                square.images[static_cast<std::size_t>(256 + (y + 2) * 16 + x + 2)]);
}

TEST(InputSize, EvaluationWithoutTheCropKeepsTheStoredImages) {
  const data::Split stored = stored_split(5, 10, 8, 1);
  const data::Split same = evaluation_input(config::DataConfig{}, stored);
  EXPECT_EQ(same.height, 10);
  EXPECT_EQ(same.width, 8);
  EXPECT_EQ(same.images, stored.images);
  EXPECT_EQ(same.labels, stored.labels);
  phalanx::testing::expect_input_error([&] { evaluation_input(with_crop(9, 0), stored); },
                                       {"data.augment.random_resized_crop.size: 9 is larger than the 10x8"});
}

}  // namespace
}  // namespace phalanx::train
