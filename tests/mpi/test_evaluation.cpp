// Distributed evaluation: each rank reads only its contiguous part of the test split, the parts
// together are the split exactly once, and the all-reduced metrics over N ranks equal those of one
// rank evaluating the whole split alone.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/importers.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/train/evaluation.hpp"
#include "small_training.hpp"
#include "support/test_support.hpp"

namespace phalanx {
namespace {

// 103 test samples: not a multiple of 2 or 4 ranks, so the parts differ in size.
constexpr std::int64_t test_count = 103;

// Rank 0 writes the file; every rank gets its path.
std::string shared_dataset(const comm::Communicator& world) {
  std::string path;
  if (world.rank() == 0) {
    static testing::ScratchDirectory scratch("evaluation_part");
    path = scratch.file("eval.h5");
    const auto train = testing::random_split("train", 64, 1),
               test = testing::random_split("test", test_count, 2);
    data::write_dataset(path, data::digit_classes(), {&train, &test}, {.chunk_samples = 16});
  }
  world.broadcast_string(path, 0);
  return path;
}

TEST(DistributedEvaluation, EachRankReadsOnlyItsPart) {
  const auto world = comm::Communicator::world();
  const auto path = shared_dataset(world);
  const auto part = train::read_evaluation_part(path, "test", world);
  const auto [begin, end] = data::ShardPlan::evaluation_range(test_count, world.rank(), world.size());
  ASSERT_EQ(part.count, end - begin);
  ASSERT_EQ(part.images.size(), static_cast<std::size_t>(part.count * 64));
  ASSERT_EQ(part.labels.size(), static_cast<std::size_t>(part.count));
  const auto whole = data::read_split(path, "test");
  for (std::int64_t sample = 0; sample < part.count; ++sample) {
    ASSERT_EQ(part.labels[sample], whole.labels[begin + sample]) << "sample " << begin + sample;
    for (int byte = 0; byte < 64; ++byte)
      ASSERT_EQ(part.images[sample * 64 + byte], whole.images[(begin + sample) * 64 + byte]);
  }
  std::int64_t total = part.count;
  world.allreduce_sum(&total, 1);
  EXPECT_EQ(total, test_count);
}

TEST(DistributedEvaluation, NRanksGiveTheMetricsOfOneRank) {
  const auto world = comm::Communicator::world();
  const auto path = shared_dataset(world);
  const auto info = data::read_dataset_info(path);
  auto backend = backend::make_cpu_backend(1);
  nn::Model model(testing::small_cnn(), Shape{8, 8, 1}, 10, *backend, 7);
  const auto distributed = train::evaluate(model, train::read_evaluation_part(path, "test", world), info.mean,
                                           info.standard_deviation, world, 16);
  const auto alone = world.split(world.rank(), 0);
  const auto reference = train::evaluate(model, train::read_evaluation_part(path, "test", alone), info.mean,
                                         info.standard_deviation, alone, 16);
  EXPECT_EQ(distributed.samples, test_count);
  EXPECT_EQ(reference.samples, test_count);
  EXPECT_DOUBLE_EQ(distributed.accuracy, reference.accuracy);
  // Only the order of the double sums differs.
  EXPECT_NEAR(distributed.loss, reference.loss, 1e-9 * std::fabs(reference.loss));
  EXPECT_GT(reference.loss, 0.0);
}

}  // namespace
}  // namespace phalanx
