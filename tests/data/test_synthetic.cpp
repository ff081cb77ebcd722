// Tests of the synthetic dataset generator: the files are valid, a pure function of the seed, and
// learnable (a nearest-class-mean classifier fitted on train beats chance by far on test).
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/importers.hpp"
#include "support/test_support.hpp"

namespace phalanx::data {
namespace {

using phalanx::testing::ScratchDirectory;

TEST(Synthesize, WritesAValidFileOfTheAskedShape) {
  ScratchDirectory scratch("synth-shape");
  const std::string path = scratch.file("synth.h5");
  synthesize(path, {.train_count = 100,
                    .test_count = 30,
                    .height = 6,
                    .width = 5,
                    .channels = 3,
                    .classes = 4,
                    .seed = 9});
  const DatasetInfo info = read_dataset_info(path);
  EXPECT_EQ(info.classes.size(), 4u);
  EXPECT_EQ(info.find_split("train")->count, 100);
  EXPECT_EQ(info.find_split("test")->count, 30);
  EXPECT_EQ(info.find_split("test")->height, 6);
  EXPECT_EQ(info.find_split("test")->width, 5);
  EXPECT_EQ(info.find_split("test")->channels, 3);
  EXPECT_EQ(info.mean.size(), 3u);
  const Split train = read_split(path, "train");
  std::vector<int> histogram(4, 0);
  for (const std::int32_t label : train.labels) ++histogram[static_cast<std::size_t>(label)];
  for (const int count : histogram) EXPECT_GT(count, 10);  // every class is present
}

TEST(Synthesize, DeterministicInTheSeed) {
  ScratchDirectory scratch("synth-seed");
  const SynthOptions options{
      .train_count = 64, .test_count = 16, .height = 4, .width = 4, .channels = 1, .classes = 3, .seed = 5};
  SynthOptions other_seed = options;
  other_seed.seed = 6;
  synthesize(scratch.file("a.h5"), options);
  synthesize(scratch.file("b.h5"), options);
  synthesize(scratch.file("c.h5"), other_seed);
  const Split a = read_split(scratch.file("a.h5"), "train"), b = read_split(scratch.file("b.h5"), "train"),
              c = read_split(scratch.file("c.h5"), "train");
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.images, c.images);
  EXPECT_EQ(read_split(scratch.file("a.h5"), "test").images, read_split(scratch.file("b.h5"), "test").images);
  EXPECT_NE(read_split(scratch.file("a.h5"), "test").images, a.images);
}

TEST(Synthesize, IsLearnable) {
  ScratchDirectory scratch("synth-learnable");
  const std::string path = scratch.file("synth.h5");
  const int classes = 10;
  synthesize(path, {.train_count = 500,
                    .test_count = 200,
                    .height = 8,
                    .width = 8,
                    .channels = 1,
                    .classes = classes,
                    .seed = 1});
  const Split train = read_split(path, "train"), test = read_split(path, "test");
  const auto pixels = static_cast<std::size_t>(train.image_bytes());
  std::vector<std::vector<double>> centroids(classes, std::vector<double>(pixels, 0.0));
  std::vector<int> counts(classes, 0);
  for (std::int64_t sample = 0; sample < train.count; ++sample) {
    const auto label = static_cast<std::size_t>(train.labels[static_cast<std::size_t>(sample)]);
    ++counts[label];
    for (std::size_t index = 0; index < pixels; ++index)
      centroids[label][index] += train.images[static_cast<std::size_t>(sample) * pixels + index];
  }
  for (int label = 0; label < classes; ++label)
    for (double& value : centroids[static_cast<std::size_t>(label)])
      value /= std::max(1, counts[static_cast<std::size_t>(label)]);
  int correct = 0;
  for (std::int64_t sample = 0; sample < test.count; ++sample) {
    int best = -1;
    double best_distance = std::numeric_limits<double>::max();
    for (int label = 0; label < classes; ++label) {
      double distance = 0.0;
      for (std::size_t index = 0; index < pixels; ++index) {
        const double difference = test.images[static_cast<std::size_t>(sample) * pixels + index] -
                                  centroids[static_cast<std::size_t>(label)][index];
        distance += difference * difference;
      }
      if (distance < best_distance) {
        best_distance = distance;
        best = label;
      }
    }
    correct += best == test.labels[static_cast<std::size_t>(sample)];
  }
  const double accuracy = static_cast<double>(correct) / static_cast<double>(test.count);
  EXPECT_GT(accuracy, 0.9) << "chance is 0.1";
}

TEST(Synthesize, RefusesBadOptions) {
  ScratchDirectory scratch("synth-bad");
  const std::string path = scratch.file("synth.h5");
  EXPECT_INPUT_ERROR(synthesize(path, {.train_count = 0}), "train count 0 must be at least 1");
  EXPECT_INPUT_ERROR(synthesize(path, {.test_count = -3}), "test count -3");
  EXPECT_INPUT_ERROR(synthesize(path, {.height = 0}), "image shape 0x28x1");
  EXPECT_INPUT_ERROR(synthesize(path, {.classes = 1}), "class count 1 must be at least 2");
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace phalanx::data
