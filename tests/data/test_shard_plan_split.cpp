// ShardPlan with one local batch per rank (heterogeneous data-parallel, docs/DESIGN.md §3): the ranks'
// slices of each global batch are disjoint, in rank order, of the requested sizes, and together
// are exactly that global batch; the streaming order gives each rank a contiguous part of the
// chunk sequence in proportion to its batch; and the equal split reproduces, sample for sample,
// the order the plan had before splits could be unequal (so old checkpoints resume unchanged).
#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/data/shard_plan.hpp"

namespace phalanx::data {
namespace {

const std::vector<std::vector<int>> uneven_splits = {
    {40, 24}, {1, 7}, {5, 1, 3}, {9, 2, 2, 4}, {3, 3, 1, 1, 6}};

TEST(ShardPlanSplit, UnevenSlicesAreDisjointAndFormEachGlobalBatch) {
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    for (const auto& split : uneven_splits) {
      const std::int64_t global = std::accumulate(split.begin(), split.end(), std::int64_t{0});
      const std::int64_t dataset_size = global * 3 + 1 + static_cast<std::int64_t>(seed);
      const int world_size = static_cast<int>(split.size());
      for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
        std::set<std::int64_t> seen;
        for (int rank = 0; rank < world_size; ++rank) {
          const ShardPlan plan(dataset_size, split, rank, seed);
          ASSERT_EQ(plan.global_batch(), global);
          ASSERT_EQ(plan.world_size(), world_size);
          ASSERT_EQ(plan.local_batch(), split[static_cast<std::size_t>(rank)]);
          ASSERT_EQ(plan.steps_per_epoch(), 3);
          const auto permutation = phalanx::testing::global_order(plan, epoch);
          EXPECT_EQ(permutation,
                    phalanx::testing::global_order(ShardPlan(dataset_size, split, 0, seed), epoch))
              << "the global order does not depend on the rank";
          const std::int64_t offset = std::accumulate(split.begin(), split.begin() + rank, std::int64_t{0});
          EXPECT_EQ(plan.batch_offset(rank), offset);
          EpochOrder order = plan.epoch_order(epoch);
          for (std::int64_t step = 0; step < plan.steps_per_epoch(); ++step) {
            const auto indices = plan.rank_indices(order, step);
            ASSERT_EQ(indices.size(), static_cast<std::size_t>(split[static_cast<std::size_t>(rank)]));
            for (std::size_t position = 0; position < indices.size(); ++position) {
              EXPECT_EQ(indices[position],
                        permutation[static_cast<std::size_t>(step * global + offset) + position]);
              EXPECT_TRUE(seen.insert(indices[position]).second) << "sample twice in epoch " << epoch;
            }
          }
        }
        // Every sample of the first steps * G positions of the permutation, none twice.
        EXPECT_EQ(static_cast<std::int64_t>(seen.size()), 3 * global);
      }
    }
  }
}

TEST(ShardPlanSplit, ChunkWindowsGiveEachRankAProportionalContiguousPart) {
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    for (const auto& split : uneven_splits) {
      for (const std::int64_t chunk : {1, 4, 16}) {
        const std::int64_t global = std::accumulate(split.begin(), split.end(), std::int64_t{0});
        const std::int64_t dataset_size = global * 6 + 5;
        const ShardOrder order = ShardOrder::chunk_windows(chunk, chunk * 2);
        const int world_size = static_cast<int>(split.size());
        const ShardPlan first(dataset_size, split, 0, seed, order);
        const std::int64_t steps = first.steps_per_epoch();
        const auto global_order = phalanx::testing::global_order(first, 0);
        ASSERT_EQ(global_order.size(), static_cast<std::size_t>(steps * global));
        std::set<std::int64_t> seen;
        for (int rank = 0; rank < world_size; ++rank) {
          const ShardPlan plan(dataset_size, split, rank, seed, order);
          ASSERT_EQ(phalanx::testing::global_order(plan, 0), global_order)
              << "rank " << rank << " computes another order";
          std::set<std::int64_t> rank_chunks;
          EpochOrder own = plan.epoch_order(0);
          for (std::int64_t step = 0; step < steps; ++step)
            for (const std::int64_t sample : plan.rank_indices(own, step)) {
              ASSERT_TRUE(seen.insert(sample).second) << "sample " << sample << " twice";
              rank_chunks.insert(sample / chunk);
            }
          // steps * b_r samples in one contiguous run of the chunk sequence.
          const std::int64_t part = steps * split[static_cast<std::size_t>(rank)];
          EXPECT_LE(static_cast<std::int64_t>(rank_chunks.size()), part / chunk + 3)
              << "rank " << rank << " of split " << ::testing::PrintToString(split);
        }
        EXPECT_EQ(static_cast<std::int64_t>(seen.size()), steps * global);
      }
    }
  }
}

// The chunk-window order as the plan computed it when every rank had the same batch, written out
// here independently, so that the equal split is checked against it rather than against itself.
std::vector<std::int64_t> equal_chunk_window_order(std::int64_t dataset_size, int local_batch, int world_size,
                                                   std::uint64_t seed, std::int64_t epoch, std::int64_t chunk,
                                                   std::int64_t window) {
  const auto shuffle = [](std::int64_t* begin, std::int64_t* end, RandomStream& random) {
    for (auto index = static_cast<std::size_t>(end - begin); index > 1; --index)
      std::swap(begin[index - 1], begin[random.next_below(index)]);
  };
  const std::uint64_t epoch_seed = mix_seed(seed, static_cast<std::uint64_t>(epoch));
  const std::int64_t chunk_count = (dataset_size + chunk - 1) / chunk;
  std::vector<std::int64_t> chunks(static_cast<std::size_t>(chunk_count));
  std::iota(chunks.begin(), chunks.end(), std::int64_t{0});
  RandomStream chunk_random(epoch_seed, 0x4348554e4bull);
  shuffle(chunks.data(), chunks.data() + chunk_count, chunk_random);
  const std::int64_t global = static_cast<std::int64_t>(local_batch) * world_size;
  const std::int64_t part = dataset_size / global * local_batch;
  std::vector<std::int64_t> sequence;
  for (const std::int64_t index : chunks)
    for (std::int64_t sample = index * chunk; sample < std::min(dataset_size, (index + 1) * chunk); ++sample)
      sequence.push_back(sample);
  sequence.resize(static_cast<std::size_t>(part * world_size));
  std::vector<std::int64_t> order(sequence.size());
  for (int rank = 0; rank < world_size; ++rank) {
    std::int64_t* part_begin = sequence.data() + rank * part;
    for (std::int64_t start = 0; start < part; start += window) {
      RandomStream random(mix_seed(epoch_seed, static_cast<std::uint64_t>(rank * part + start)),
                          0x57494e444full);
      shuffle(part_begin + start, part_begin + std::min(part, start + window), random);
    }
    for (std::int64_t position = 0; position < part; ++position)
      order[static_cast<std::size_t>(position / local_batch * global + rank * local_batch +
                                     position % local_batch)] = part_begin[position];
  }
  return order;
}

TEST(ShardPlanSplit, EqualSplitKeepsTheOrderOfEqualBatches) {
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    for (int world_size = 1; world_size <= 4; ++world_size) {
      for (const int local_batch : {1, 5, 16}) {
        const std::int64_t dataset_size = static_cast<std::int64_t>(local_batch) * world_size * 7 + 3;
        const std::vector<int> split(static_cast<std::size_t>(world_size), local_batch);
        for (int rank = 0; rank < world_size; ++rank) {
          // Permutation order: rank r takes permutation[step*G + r*B, + B).
          const ShardPlan listed(dataset_size, split, rank, seed),
              scalar(dataset_size, local_batch, rank, world_size, seed);
          const auto permutation = phalanx::testing::global_order(listed, 1);
          ASSERT_EQ(permutation, phalanx::testing::global_order(scalar, 1));
          for (std::int64_t step = 0; step < listed.steps_per_epoch(); ++step) {
            const auto begin = permutation.begin() + step * local_batch * world_size + rank * local_batch;
            EpochOrder order = listed.epoch_order(1);
            EXPECT_EQ(listed.rank_indices(order, step),
                      std::vector<std::int64_t>(begin, begin + local_batch));
          }
          // Chunk windows: the same global order as before.
          for (const std::int64_t chunk : {1, 8}) {
            const ShardOrder order = ShardOrder::chunk_windows(chunk, chunk * 3);
            const ShardPlan streaming(dataset_size, split, rank, seed, order);
            EXPECT_EQ(
                phalanx::testing::global_order(streaming, 2),
                equal_chunk_window_order(dataset_size, local_batch, world_size, seed, 2, chunk, chunk * 3))
                << "world " << world_size << " batch " << local_batch << " chunk " << chunk;
          }
        }
      }
    }
  }
}

TEST(ShardPlanSplit, TooFewSamplesForTheGlobalBatchIsAnInputError) {
  EXPECT_INPUT_ERROR(ShardPlan(63, std::vector<int>{40, 24}, 1, 0),
                     "fewer than one global batch of 64 (local batches [40, 24])");
  EXPECT_NO_THROW(ShardPlan(64, std::vector<int>{40, 24}, 1, 0));
  EXPECT_THROW(ShardPlan(100, std::vector<int>{40, 0}, 0, 0), Error);
  EXPECT_THROW(ShardPlan(100, std::vector<int>{}, 0, 0), Error);
}

}  // namespace
}  // namespace phalanx::data
