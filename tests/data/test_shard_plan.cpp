// Property tests of ShardPlan over many seeds, world sizes 1..5 and dataset sizes that do not divide
// by the batch: within an epoch no sample is seen twice across ranks, rank slices are disjoint, the
// permutation is a pure function of (seed, epoch), and evaluation ranges cover every sample once.
#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/shard_plan.hpp"

namespace phalanx::data {
namespace {

TEST(ShardPlan, EachSampleAtMostOncePerEpochAcrossRanks) {
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    for (int world_size = 1; world_size <= 5; ++world_size) {
      for (const int local_batch : {1, 3, 8}) {
        const std::int64_t dataset_size =
            static_cast<std::int64_t>(local_batch) * world_size * 4 + 3 + seed % 5;
        for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
          std::vector<int> seen(static_cast<std::size_t>(dataset_size), 0);
          std::int64_t steps = -1;
          for (int rank = 0; rank < world_size; ++rank) {
            const ShardPlan plan(dataset_size, local_batch, rank, world_size, seed);
            EXPECT_EQ(plan.global_batch(), static_cast<std::int64_t>(local_batch) * world_size);
            EXPECT_EQ(plan.steps_per_epoch(), dataset_size / plan.global_batch());
            steps = plan.steps_per_epoch();
            const std::vector<std::int64_t> permutation = phalanx::testing::global_order(plan, epoch);
            EpochOrder order = plan.epoch_order(epoch);
            for (std::int64_t step = 0; step < plan.steps_per_epoch(); ++step) {
              const std::vector<std::int64_t> indices = plan.rank_indices(order, step);
              ASSERT_EQ(indices.size(), static_cast<std::size_t>(local_batch));
              for (std::size_t position = 0; position < indices.size(); ++position) {
                // rank r takes permutation[step*G + r*B .. + B)
                EXPECT_EQ(
                    indices[position],
                    permutation[static_cast<std::size_t>(step * plan.global_batch() + rank * local_batch) +
                                position]);
                ASSERT_GE(indices[position], 0);
                ASSERT_LT(indices[position], dataset_size);
                ++seen[static_cast<std::size_t>(indices[position])];
              }
            }
          }
          // Disjoint across ranks and steps: no sample twice; exactly steps * G distinct samples used.
          EXPECT_LE(*std::max_element(seen.begin(), seen.end()), 1)
              << "seed " << seed << " world " << world_size << " batch " << local_batch;
          EXPECT_EQ(std::accumulate(seen.begin(), seen.end(), std::int64_t{0}),
                    steps * local_batch * world_size);
          EXPECT_LT(dataset_size - steps * local_batch * world_size,
                    static_cast<std::int64_t>(local_batch) * world_size)
              << "only the last partial global batch is dropped";
        }
      }
    }
  }
}

TEST(ShardPlan, PermutationIsAPureFunctionOfSeedAndEpoch) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const ShardPlan rank_zero(103, 4, 0, 3, seed), rank_two(103, 4, 2, 3, seed);
    const ShardPlan other_world(103, 2, 0, 5, seed);
    const std::vector<std::int64_t> epoch0 = phalanx::testing::global_order(rank_zero, 0);
    // A permutation of [0, N).
    std::vector<std::int64_t> sorted = epoch0;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::int64_t> identity(103);
    std::iota(identity.begin(), identity.end(), 0);
    EXPECT_EQ(sorted, identity);
    // Same on every rank, every world size, every call.
    EXPECT_EQ(phalanx::testing::global_order(rank_two, 0), epoch0);
    EXPECT_EQ(phalanx::testing::global_order(other_world, 0), epoch0);
    EXPECT_EQ(phalanx::testing::global_order(rank_zero, 0), epoch0);
    // Different for another epoch and another seed.
    EXPECT_NE(phalanx::testing::global_order(rank_zero, 1), epoch0);
    EXPECT_NE(phalanx::testing::global_order(ShardPlan(103, 4, 0, 3, seed + 1000), 0), epoch0);
    EXPECT_NE(epoch0, identity);
  }
}

TEST(ShardPlan, EvaluationRangesCoverEverySampleOnce) {
  for (int world_size = 1; world_size <= 5; ++world_size) {
    for (const std::int64_t dataset_size : {0, 1, 4, 7, 10, 103, 10000}) {
      std::int64_t expected_begin = 0, smallest = dataset_size, largest = 0;
      for (int rank = 0; rank < world_size; ++rank) {
        const auto [begin, end] = ShardPlan::evaluation_range(dataset_size, rank, world_size);
        EXPECT_EQ(begin, expected_begin) << "contiguous, in rank order";
        EXPECT_LE(begin, end);
        smallest = std::min(smallest, end - begin);
        largest = std::max(largest, end - begin);
        expected_begin = end;
      }
      EXPECT_EQ(expected_begin, dataset_size) << "covers all samples";
      EXPECT_LE(largest - smallest, 1) << "sizes differ by at most one";
    }
  }
}

TEST(ShardPlan, ADatasetSmallerThanOneGlobalBatchIsAnInputError) {
  EXPECT_INPUT_ERROR(
      ShardPlan(10, 4, 0, 3, 0),
      "the training data has 10 samples, fewer than one global batch of 12 (local batch 4 x 3 ranks)");
  EXPECT_NO_THROW(ShardPlan(12, 4, 0, 3, 0));
  EXPECT_EQ(ShardPlan(12, 4, 1, 3, 0).steps_per_epoch(), 1);
}

TEST(ShardPlan, InvalidArgumentsAreInternalErrors) {
  const auto expect_internal = [](auto&& call) {
    try {
      call();
      ADD_FAILURE() << "expected an error";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::Internal) << error.what();
    }
  };
  expect_internal([] { ShardPlan(100, 0, 0, 1, 0); });
  expect_internal([] { ShardPlan(100, 4, 3, 3, 0); });
  expect_internal([] { ShardPlan(100, 4, -1, 3, 0); });
  expect_internal([] { ShardPlan(100, 4, 0, 0, 0); });
  const ShardPlan plan(100, 4, 0, 2, 0);
  EpochOrder order = plan.epoch_order(0);
  expect_internal([&] { plan.rank_indices(order, plan.steps_per_epoch()); });
  expect_internal([&] { order.at(100); });
  expect_internal([&] { plan.epoch_order(-1); });
  EpochOrder smaller = ShardPlan(99, 4, 0, 2, 0).epoch_order(0);
  expect_internal([&] { plan.rank_indices(smaller, 0); });
  EpochOrder other_seed = ShardPlan(100, 4, 0, 2, 1).epoch_order(0);
  expect_internal([&] { plan.rank_indices(other_seed, 0); });
  expect_internal([] { ShardPlan::evaluation_range(10, 2, 2); });
}

}  // namespace
}  // namespace phalanx::data
