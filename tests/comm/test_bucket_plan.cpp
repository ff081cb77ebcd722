// BucketPlan, the bucket cut and start order of both gradient syncs: where the buckets fall for
// buffers that the bucket size divides and does not, the small first bucket, degenerate buffers,
// and which buckets start as backward reports ever earlier offsets final.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "phalanx/comm/bucket_plan.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::testing {
namespace {

using comm::BucketPlan;
using Ranges = std::vector<std::pair<std::int64_t, std::int64_t>>;
using IndexList = std::vector<std::size_t>;

constexpr std::size_t floats(std::size_t count) {
  return count * sizeof(float);
}

Ranges ranges_of(const BucketPlan& plan) {
  Ranges ranges;
  for (std::size_t index = 0; index < plan.size(); ++index) {
    ranges.emplace_back(plan[index].begin, plan[index].end);
    EXPECT_EQ(plan[index].elements(), plan[index].end - plan[index].begin);
  }
  return ranges;
}

IndexList list(BucketPlan::Indices indices) {
  IndexList values;
  for (const std::size_t index : indices) values.push_back(index);
  return values;
}

TEST(BucketPlan, ASizeThatDividesGivesEqualBucketsFromTheEnd) {
  const BucketPlan plan(120, floats(40), floats(40));
  EXPECT_EQ(ranges_of(plan), (Ranges{{80, 120}, {40, 80}, {0, 40}}));
}

TEST(BucketPlan, ASizeThatDoesNotDivideLeavesTheShortBucketAtOffsetZero) {
  const BucketPlan plan(100, floats(40), std::size_t{1} << 20);
  EXPECT_EQ(ranges_of(plan), (Ranges{{60, 100}, {20, 60}, {0, 20}}));
}

TEST(BucketPlan, TheFirstBucketIsTheSmallOneThenFullBuckets) {
  EXPECT_EQ(ranges_of(BucketPlan(100, floats(40), floats(10))),
            (Ranges{{90, 100}, {50, 90}, {10, 50}, {0, 10}}));
  // 10007 floats in 4 KiB buckets after a 1 KiB first one: the bucket at offset 0 takes the rest.
  const BucketPlan plan(10007, 4096, 1024);
  ASSERT_EQ(plan.size(), 11u);
  EXPECT_EQ(plan[0].begin, 10007 - 256);
  for (std::size_t index = 1; index + 1 < plan.size(); ++index) EXPECT_EQ(plan[index].elements(), 1024);
  EXPECT_EQ(plan[plan.size() - 1].begin, 0);
  EXPECT_EQ(plan[plan.size() - 1].elements(), 10007 - 256 - 9 * 1024);
}

TEST(BucketPlan, AFirstBucketLargerThanTheOthersIsCutToTheirSize) {
  EXPECT_EQ(ranges_of(BucketPlan(100, floats(40), floats(70))), (Ranges{{60, 100}, {20, 60}, {0, 20}}));
}

TEST(BucketPlan, BytesRoundDownToWholeFloatsAndNeverBelowOne) {
  // 10 bytes hold two floats; 3 bytes and 0 bytes still make one-float buckets.
  EXPECT_EQ(ranges_of(BucketPlan(5, 10, 10)), (Ranges{{3, 5}, {1, 3}, {0, 1}}));
  EXPECT_EQ(ranges_of(BucketPlan(3, 3, 3)), (Ranges{{2, 3}, {1, 2}, {0, 1}}));
  EXPECT_EQ(ranges_of(BucketPlan(3, floats(2), 0)), (Ranges{{2, 3}, {0, 2}}));
}

TEST(BucketPlan, OneElementIsOneBucket) {
  BucketPlan plan(1, floats(40), floats(10));
  EXPECT_EQ(ranges_of(plan), (Ranges{{0, 1}}));
  plan.begin_step();
  EXPECT_EQ(list(plan.take_ready(1)), IndexList{});
  EXPECT_EQ(list(plan.take_ready(0)), IndexList{0});
  EXPECT_EQ(list(plan.take_rest()), IndexList{});
}

TEST(BucketPlan, ZeroElementsHaveNoBucketsAndNothingToStart) {
  BucketPlan plan(0, floats(40), floats(10));
  EXPECT_EQ(plan.size(), 0u);
  plan.begin_step();
  EXPECT_EQ(list(plan.take_ready(0)), IndexList{});
  EXPECT_EQ(list(plan.take_rest()), IndexList{});
  EXPECT_EQ(list(plan.started()), IndexList{});
}

TEST(BucketPlan, ANegativeCountIsRefused) {
  EXPECT_THROW(BucketPlan(-1, floats(40), floats(10)), Error);
}

// [90,100) [50,90) [10,50) [0,10): a bucket starts only once every element of it is final, in
// order, once a step.
TEST(BucketPlan, BucketsStartInOrderAsOffsetsDecrease) {
  BucketPlan plan(100, floats(40), floats(10));
  plan.begin_step();
  EXPECT_EQ(list(plan.take_ready(100)), IndexList{});  // nothing final yet
  EXPECT_EQ(list(plan.take_ready(95)), IndexList{});   // the first bucket only in part
  EXPECT_EQ(list(plan.take_ready(90)), IndexList{0});
  EXPECT_EQ(list(plan.take_ready(90)), IndexList{});  // already started
  EXPECT_EQ(list(plan.take_ready(51)), IndexList{});
  EXPECT_EQ(list(plan.started()), IndexList{0});
  EXPECT_EQ(list(plan.take_ready(10)), (IndexList{1, 2}));  // two at once, in bucket order
  EXPECT_EQ(list(plan.take_ready(60)), IndexList{});        // an offset going back starts nothing
  EXPECT_EQ(list(plan.started()), (IndexList{0, 1, 2}));
  EXPECT_EQ(list(plan.take_rest()), IndexList{3});
  EXPECT_EQ(list(plan.take_rest()), IndexList{});
  EXPECT_EQ(list(plan.take_ready(0)), IndexList{});
  EXPECT_EQ(list(plan.started()), (IndexList{0, 1, 2, 3}));
}

TEST(BucketPlan, TheRestStartsInOrderAndANewStepStartsAfresh) {
  BucketPlan plan(100, floats(40), floats(10));
  plan.begin_step();
  EXPECT_EQ(list(plan.take_rest()), (IndexList{0, 1, 2, 3}));  // backward reported nothing
  plan.begin_step();
  EXPECT_EQ(list(plan.started()), IndexList{});
  EXPECT_EQ(list(plan.take_ready(50)), (IndexList{0, 1}));
  EXPECT_EQ(list(plan.take_rest()), (IndexList{2, 3}));
  plan.begin_step();
  EXPECT_EQ(list(plan.take_ready(0)), (IndexList{0, 1, 2, 3}));
  EXPECT_EQ(list(plan.take_rest()), IndexList{});
}

}  // namespace
}  // namespace phalanx::testing
