// A plan over 10^10 samples (a terabyte-scale training file) holds memory independent of the
// sample count: this binary replaces the global allocator with one that counts the bytes live on
// the heap, and checks the peak while a plan is built and yields batches, for the per-index
// permutation and for chunk windows, against a materialised order that the counter does see.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "counting_allocator.hpp"
#include "phalanx/data/shard_plan.hpp"

using counted_heap::live_bytes;
using counted_heap::peak_bytes;

namespace phalanx::data {
namespace {

// The most bytes live at once while `work` runs, above what was live before it.
template <typename Work>
std::int64_t peak_heap_during(Work&& work) {
  const std::int64_t before = live_bytes.load();
  peak_bytes = before;
  work();
  return peak_bytes.load() - before;
}

constexpr std::int64_t ten_billion = 10'000'000'000;

// Builds the plan, takes an epoch's order and yields 60 batches at its start, middle and end into
// `drawn` (reserved by the caller, outside the measurement).
void yield_batches(std::int64_t dataset_size, const std::vector<int>& split, int rank, ShardOrder order,
                   std::vector<std::int64_t>& drawn) {
  const ShardPlan plan(dataset_size, split, rank, 1234, order);
  EpochOrder epoch = plan.epoch_order(7);
  for (const std::int64_t start : {std::int64_t{0}, plan.steps_per_epoch() / 2, plan.steps_per_epoch() - 20})
    for (std::int64_t step = start; step < start + 20; ++step)
      for (const std::int64_t sample : plan.rank_indices(epoch, step)) {
        ASSERT_GE(sample, 0);
        ASSERT_LT(sample, dataset_size);
        drawn.push_back(sample);
      }
}

void expect_distinct(std::vector<std::int64_t> drawn, std::size_t count) {
  EXPECT_EQ(drawn.size(), count);
  std::sort(drawn.begin(), drawn.end());
  EXPECT_EQ(std::adjacent_find(drawn.begin(), drawn.end()), drawn.end()) << "a sample twice";
}

TEST(PlanMemory, TenBillionSamplesPlanInConstantMemory) {
  const std::vector<int> split = {256, 256, 256, 192, 256, 256, 256, 256};
  std::vector<std::int64_t> drawn;
  drawn.reserve(60 * 256);
  const std::int64_t permutation_peak =
      peak_heap_during([&] { yield_batches(ten_billion, split, 3, {}, drawn); });
  // The plan, the order and one batch of indices: a few KiB, against 80 GB materialised.
  EXPECT_LT(permutation_peak, 16 * 1024) << "bytes";
  expect_distinct(drawn, 60 * 192);
  // Streaming: the chunk order per index plus one shuffle window (16384 samples, 128 KiB).
  drawn.clear();
  const std::int64_t streaming_peak = peak_heap_during(
      [&] { yield_batches(ten_billion, split, 5, ShardOrder::chunk_windows(64, 16384), drawn); });
  EXPECT_LT(streaming_peak, 16384 * 8 + 16 * 1024) << "bytes";
  expect_distinct(drawn, 60 * 256);
}

TEST(PlanMemory, TheCounterSeesAMaterialisedOrder) {
  // The same call on a million samples, materialised: 8 bytes per sample are live at once.
  std::vector<std::int64_t> drawn;
  drawn.reserve(60 * 100);
  const std::int64_t peak = peak_heap_during([&] {
    yield_batches(1'000'000, {100}, 0, ShardOrder{}.with_shuffle(ShardOrder::Shuffle::Materialised), drawn);
  });
  EXPECT_GE(peak, 8'000'000);
  EXPECT_LT(peak, 8'000'000 + 16 * 1024);
  expect_distinct(drawn, 60 * 100);
}

}  // namespace
}  // namespace phalanx::data
