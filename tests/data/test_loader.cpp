// Tests of the Loader: it delivers exactly the batches ShardPlan prescribes, in order, across epoch
// boundaries and from a mid-epoch start; a handed-out batch stays intact while the producer runs
// ahead; its memory comes from the given allocator; and it stops promptly when abandoned early.
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/loader.hpp"

namespace phalanx::data {
namespace {

// Each image starts with its sample index (little endian), so a batch's origin is visible.
std::shared_ptr<const Split> numbered_split(std::int64_t count) {
  auto split = std::make_shared<Split>(phalanx::testing::make_split("train", count, 3, 2, 2, 10, 4));
  for (std::int64_t sample = 0; sample < count; ++sample) {
    std::uint8_t* image = split->images.data() + sample * split->image_bytes();
    image[0] = static_cast<std::uint8_t>(sample);
    image[1] = static_cast<std::uint8_t>(sample >> 8);
  }
  return split;
}

// Counts allocations so a test can see that every slot came from, and went back to, the allocator.
class CountingAllocator final : public Allocator {
 public:
  void* allocate(std::size_t bytes) override {
    ++allocations;
    outstanding_bytes += bytes;
    return HostAllocator::instance().allocate(bytes);
  }
  void deallocate(void* pointer, std::size_t bytes) noexcept override {
    ++deallocations;
    outstanding_bytes -= bytes;
    HostAllocator::instance().deallocate(pointer, bytes);
  }
  DeviceKind device_kind() const override { return DeviceKind::Cpu; }
  int allocations = 0, deallocations = 0;
  std::size_t outstanding_bytes = 0;
};

// Checks `batch` against what ShardPlan says for (epoch, step).
void expect_batch(const Batch& batch, const Split& split, const ShardPlan& plan, std::int64_t epoch,
                  std::int64_t step) {
  ASSERT_EQ(batch.epoch, epoch);
  ASSERT_EQ(batch.step, step);
  ASSERT_EQ(batch.size, plan.local_batch());
  auto order = plan.epoch_order(epoch);
  const std::vector<std::int64_t> indices = plan.rank_indices(order, step);
  const auto image_bytes = static_cast<std::size_t>(split.image_bytes());
  for (std::size_t position = 0; position < indices.size(); ++position) {
    const auto sample = static_cast<std::size_t>(indices[position]);
    EXPECT_EQ(batch.labels[position], split.labels[sample]) << "epoch " << epoch << " step " << step;
    EXPECT_EQ(std::memcmp(batch.images + position * image_bytes, split.images.data() + sample * image_bytes,
                          image_bytes),
              0)
        << "epoch " << epoch << " step " << step << " position " << position;
  }
}

TEST(Loader, DeliversThePlannedBatchesAcrossEpochs) {
  const auto split = numbered_split(103);
  for (int rank = 0; rank < 3; ++rank) {
    const ShardPlan plan(103, 4, rank, 3, 77);  // 8 steps per epoch, 7 samples dropped
    CountingAllocator allocator;
    {
      Loader loader(split, plan, 3, 0, 0, 3, allocator);
      for (std::int64_t epoch = 0; epoch < 3; ++epoch)
        for (std::int64_t step = 0; step < plan.steps_per_epoch(); ++step) {
          const Batch* batch = loader.next();
          ASSERT_NE(batch, nullptr) << "epoch " << epoch << " step " << step;
          expect_batch(*batch, *split, plan, epoch, step);
        }
      EXPECT_EQ(loader.next(), nullptr);
      EXPECT_EQ(loader.next(), nullptr) << "stays at the end";
    }
    EXPECT_EQ(allocator.allocations, 2 * (3 + 1)) << "images and labels for prefetch + 1 slots";
    EXPECT_EQ(allocator.deallocations, allocator.allocations);
    EXPECT_EQ(allocator.outstanding_bytes, 0u);
  }
}

TEST(Loader, StartsMidEpoch) {
  const auto split = numbered_split(50);
  const ShardPlan plan(50, 3, 1, 2, 5);  // 8 steps per epoch
  Loader loader(split, plan, 2, 1, 5, 3, HostAllocator::instance());
  std::int64_t delivered = 0;
  std::int64_t epoch = 1, step = 5;
  while (const Batch* batch = loader.next()) {
    expect_batch(*batch, *split, plan, epoch, step);
    ++delivered;
    if (++step == plan.steps_per_epoch()) {
      ++epoch;
      step = 0;
    }
  }
  EXPECT_EQ(delivered, 3 + 8);  // steps 5..7 of epoch 1, all of epoch 2
}

TEST(Loader, AResumePointAtTheEndOfAnEpochStartsTheNext) {
  const auto split = numbered_split(20);
  const ShardPlan plan(20, 5, 0, 1, 1);  // 4 steps per epoch
  Loader loader(split, plan, 1, 0, 4, 2, HostAllocator::instance());
  const Batch* batch = loader.next();
  ASSERT_NE(batch, nullptr);
  expect_batch(*batch, *split, plan, 1, 0);
  Loader empty(split, plan, 1, 1, 4, 2, HostAllocator::instance());
  EXPECT_EQ(empty.next(), nullptr);
  Loader nothing(split, plan, 1, 2, 0, 2, HostAllocator::instance());
  EXPECT_EQ(nothing.next(), nullptr);
}

TEST(Loader, HandedOutBatchSurvivesTheProducerRunningAhead) {
  const auto split = numbered_split(64);
  const ShardPlan plan(64, 2, 0, 1, 3);
  Loader loader(split, plan, 2, 0, 0, 2, HostAllocator::instance());
  for (std::int64_t step = 0; step < plan.steps_per_epoch(); ++step) {
    const Batch* batch = loader.next();
    ASSERT_NE(batch, nullptr);
    // Give the producer every chance to fill all the other slots before checking this one.
    if (step % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    expect_batch(*batch, *split, plan, 0, step);
  }
}

TEST(Loader, DestructorReturnsQuicklyWhenTheConsumerStopsEarly) {
  const auto split = numbered_split(1000);
  const ShardPlan plan(1000, 10, 0, 1, 0);
  for (const int consumed : {0, 1, 5}) {
    const auto start = std::chrono::steady_clock::now();
    {
      Loader loader(split, plan, 4, 0, 0, 1000000, HostAllocator::instance());
      for (int index = 0; index < consumed; ++index) ASSERT_NE(loader.next(), nullptr);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the producer is blocked on a full ring
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 1.0) << "after consuming " << consumed;
  }
}

TEST(Loader, RefusesInconsistentArguments) {
  const auto split = numbered_split(40);
  const ShardPlan plan(40, 4, 0, 2, 0);  // 5 steps per epoch
  const auto expect_internal = [](auto&& call) {
    try {
      call();
      ADD_FAILURE() << "expected an error";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::Internal) << error.what();
    }
  };
  expect_internal([&] { Loader(split, plan, 0, 0, 0, 1, HostAllocator::instance()); });
  expect_internal([&] { Loader(split, plan, 2, 0, 6, 1, HostAllocator::instance()); });
  expect_internal([&] { Loader(split, plan, 2, 2, 0, 1, HostAllocator::instance()); });
  expect_internal([&] { Loader(numbered_split(41), plan, 2, 0, 0, 1, HostAllocator::instance()); });
  expect_internal(
      [&] { Loader(std::shared_ptr<const Split>(), plan, 2, 0, 0, 1, HostAllocator::instance()); });
}

}  // namespace
}  // namespace phalanx::data
