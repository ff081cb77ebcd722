// GradSync against a sum computed locally: each rank can regenerate every rank's gradients from
// the seed, so the expected all-reduce result needs no communication.
#include <gtest/gtest.h>

#include <random>

#include "phalanx/comm/grad_sync.hpp"

namespace phalanx::comm {
namespace {

std::vector<float> gradients_of(int rank, std::int64_t count) {
  std::mt19937 generator(1000 + rank);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (auto& value : values) value = uniform(generator);
  return values;
}

void check_sum(std::int64_t count, std::size_t bucket_bytes, const std::vector<std::int64_t>& ready_offsets) {
  const auto world = Communicator::world();
  auto gradients = gradients_of(world.rank(), count);
  GradSync sync(world, gradients.data(), count, bucket_bytes);
  sync.begin_step();
  for (auto offset : ready_offsets) sync.gradients_ready(offset);
  const double exposed = sync.wait();
  EXPECT_GE(exposed, 0.0);
  std::vector<double> expected(static_cast<std::size_t>(count), 0.0);
  for (int rank = 0; rank < world.size(); ++rank) {
    const auto other = gradients_of(rank, count);
    for (std::int64_t index = 0; index < count; ++index) expected[index] += other[index];
  }
  for (std::int64_t index = 0; index < count; ++index)
    ASSERT_NEAR(gradients[index], expected[index], 1e-5) << "element " << index << " of " << count;
}

TEST(GradSync, OneBucketWithoutReadyCalls) {
  check_sum(1000, 1 << 20, {});
}

TEST(GradSync, ManyBucketsLaunchedAsBackwardProceeds) {
  // 10007 floats in 4 KiB buckets: 10 buckets, the last one short.
  check_sum(10007, 4096, {9000, 7000, 4000, 1500, 0});
}

TEST(GradSync, BucketsAreCutFromTheEnd) {
  const auto world = Communicator::world();
  std::vector<float> gradients(100, 1.0f);
  GradSync sync(world, gradients.data(), 100, 40 * sizeof(float));
  EXPECT_EQ(sync.bucket_count(), 3u);  // [60,100) [20,60) [0,20)
  sync.begin_step();
  sync.gradients_ready(60);
  sync.wait();
  for (float value : gradients) EXPECT_FLOAT_EQ(value, static_cast<float>(world.size()));
}

TEST(GradSync, FirstBucketIsSmallSoTheLastLayersStartEarly) {
  const auto world = Communicator::world();
  std::vector<float> gradients(100, 2.0f);
  GradSync sync(world, gradients.data(), 100, 40 * sizeof(float), 10 * sizeof(float));
  EXPECT_EQ(sync.bucket_count(), 4u);  // [90,100) [50,90) [10,50) [0,10)
  sync.begin_step();
  sync.gradients_ready(90);  // only the first bucket is final: it is launched, the rest wait
  sync.gradients_ready(0);
  sync.wait();
  for (float value : gradients) EXPECT_FLOAT_EQ(value, 2.0f * static_cast<float>(world.size()));
}

TEST(Communicator, SplitFormsIndependentGroups) {
  const auto world = Communicator::world();
  const auto group = world.split(world.rank() % 2, world.rank());
  std::int64_t value = 1;
  group.allreduce_sum(&value, 1);
  EXPECT_EQ(value, group.size());
  EXPECT_EQ(group.size(), (world.size() + 1 - world.rank() % 2) / 2);
  std::string text = world.rank() == 0 ? "from rank zero" : "";
  world.broadcast_string(text, 0);
  EXPECT_EQ(text, "from rank zero");
}

}  // namespace
}  // namespace phalanx::comm
