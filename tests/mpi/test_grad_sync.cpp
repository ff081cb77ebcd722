// GradSync against a sum computed locally: each rank can regenerate every rank's gradients from
// the seed, so the expected all-reduce result needs no communication.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

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

// Staging whose copies to the host land late, as a GPU's do: a copy is made only when landed()
// has been asked `delay` times or wait_landed() is called, and the host buffer holds stale values
// (NaN) until then. GradSync must start each all-reduce only on landed bytes and in bucket order;
// a different delay per rank makes the ranks start them at different calls.
class LateLandingStaging final : public HostStaging {
 public:
  explicit LateLandingStaging(int delay) : delay_(delay) {}
  float* host_buffer(std::int64_t elements) override {
    host_.assign(static_cast<std::size_t>(elements), NAN);
    return host_.data();
  }
  void start_to_host(std::size_t bucket, float* host_destination, const float* device_source,
                     std::int64_t count) override {
    if (pending_.size() <= bucket) pending_.resize(bucket + 1);
    std::fill(host_destination, host_destination + count, NAN);  // the bytes are not there yet
    pending_[bucket] = Pending{host_destination, device_source, count, 0, true};
  }
  bool landed(std::size_t bucket) override {
    Pending& copy = pending_.at(bucket);
    if (copy.active && ++copy.queries < delay_) return false;
    wait_landed(bucket);
    return true;
  }
  void wait_landed(std::size_t bucket) override {
    Pending& copy = pending_.at(bucket);
    if (copy.active) std::copy(copy.source, copy.source + copy.count, copy.destination);
    copy.active = false;
  }
  void start_to_device(std::size_t bucket, float* device_destination, const float* host_source,
                       std::int64_t count) override {
    EXPECT_FALSE(pending_.at(bucket).active) << "bucket " << bucket << " went back before it landed";
    std::copy(host_source, host_source + count, device_destination);
  }

 private:
  struct Pending {
    float* destination = nullptr;
    const float* source = nullptr;
    std::int64_t count = 0;
    int queries = 0;
    bool active = false;
  };
  int delay_;
  std::vector<float> host_;
  std::vector<Pending> pending_;
};

// Staged through copies that land late gives the in-place sums bit for bit, over several steps.
TEST(GradSync, StagedCopiesThatLandLateGiveTheInPlaceSums) {
  const auto world = Communicator::world();
  const std::int64_t count = 10007;
  const std::vector<std::int64_t> ready_offsets = {9000, 7000, 4000, 1500, 0};
  for (int step = 0; step < 3; ++step) {
    auto in_place = gradients_of(world.rank() + 10 * step, count);
    auto staged = in_place;
    GradSync direct(world, in_place.data(), count, 4096);
    direct.begin_step();
    for (auto offset : ready_offsets) direct.gradients_ready(offset);
    direct.wait();
    GradSync through_host(world, staged.data(), count, 4096,
                          std::make_unique<LateLandingStaging>(1 + (world.rank() + step) % 3));
    through_host.begin_step();
    // Fewer ready calls than buckets: some copies are still "in flight" when wait() comes.
    for (auto offset : ready_offsets) through_host.gradients_ready(offset);
    through_host.wait();
    ASSERT_EQ(0, std::memcmp(in_place.data(), staged.data(), in_place.size() * sizeof(float)))
        << "step " << step;
  }
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
