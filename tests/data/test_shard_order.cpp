// Property tests of the chunk-window order that streaming (data.cache: none) trains in, over many
// seeds, world sizes, chunk and window sizes and dataset sizes that do not divide by the batch:
// every rank computes the same global order, no sample appears twice in an epoch, exactly
// steps * G samples are used, each rank's samples come from one contiguous run of whole chunks
// (so it reads about 1/world_size of the file), and the order changes from epoch to epoch.
#include <algorithm>
#include <set>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/shard_plan.hpp"

namespace phalanx::data {
namespace {

TEST(ShardOrder, ChunkWindowsCoverEachSampleAtMostOnceAndAgreeAcrossRanks) {
  int cases = 0;
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    for (int world_size = 1; world_size <= 5; ++world_size) {
      for (const int local_batch : {1, 3, 8}) {
        for (const std::int64_t chunk : {1, 4, 7, 64}) {
          for (const std::int64_t window_chunks : {1, 3}) {
            const std::int64_t dataset_size = static_cast<std::int64_t>(local_batch) * world_size * 5 + 3 +
                                              static_cast<std::int64_t>(seed % 5);
            const ShardOrder order = ShardOrder::chunk_windows(chunk, chunk * window_chunks);
            const ShardPlan first(dataset_size, local_batch, 0, world_size, seed, order);
            const std::int64_t steps = first.steps_per_epoch();
            ASSERT_EQ(steps, dataset_size / first.global_batch());
            std::vector<std::int64_t> previous;
            for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
              const std::vector<std::int64_t> global = phalanx::testing::global_order(first, epoch);
              ASSERT_EQ(global.size(), static_cast<std::size_t>(steps * first.global_batch()));
              std::set<std::int64_t> seen;
              for (int rank = 0; rank < world_size; ++rank) {
                const ShardPlan plan(dataset_size, local_batch, rank, world_size, seed, order);
                ASSERT_EQ(phalanx::testing::global_order(plan, epoch), global)
                    << "rank " << rank << " computes another global order";
                EpochOrder own = plan.epoch_order(epoch);
                std::set<std::int64_t> rank_chunks;
                for (std::int64_t step = 0; step < steps; ++step) {
                  for (const std::int64_t sample : plan.rank_indices(own, step)) {
                    ASSERT_GE(sample, 0);
                    ASSERT_LT(sample, dataset_size);
                    ASSERT_TRUE(seen.insert(sample).second)
                        << "sample " << sample << " twice in epoch " << epoch;
                    rank_chunks.insert(sample / chunk);
                  }
                }
                // One contiguous part of the chunk sequence: at most part/chunk + 3 chunks (the
                // part may start and end inside a chunk, and the file's last, shorter chunk may
                // fall inside it).
                const std::int64_t part = steps * local_batch;
                EXPECT_LE(static_cast<std::int64_t>(rank_chunks.size()), part / chunk + 3)
                    << "rank " << rank << " reads chunks spread over the file";
              }
              EXPECT_EQ(static_cast<std::int64_t>(seen.size()), steps * first.global_batch());
              if (dataset_size / chunk >= 4 && epoch > 0) {
                EXPECT_NE(global, previous) << "same order in two epochs";
              }
              previous = global;
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 1000);
}

TEST(ShardOrder, ChunkWindowsIsAPureFunctionOfSeedAndEpoch) {
  const ShardOrder order = ShardOrder::chunk_windows(16, 64);
  const ShardPlan a(1000, 10, 0, 4, 7, order), b(1000, 10, 3, 4, 7, order),
      other_seed(1000, 10, 0, 4, 8, order);
  EXPECT_EQ(phalanx::testing::global_order(a, 2), phalanx::testing::global_order(b, 2));
  EXPECT_NE(phalanx::testing::global_order(a, 2), phalanx::testing::global_order(a, 3));
  EXPECT_NE(phalanx::testing::global_order(a, 2), phalanx::testing::global_order(other_seed, 2));
}

TEST(ShardOrder, ShufflesWithinWindowsButKeepsWindowsApart) {
  // One rank, chunk 10, window 30: the first 30 trained samples are the first three chunks of the
  // shuffled chunk order, in some order other than storage order.
  const ShardPlan plan(200, 10, 0, 1, 3, ShardOrder::chunk_windows(10, 30));
  const std::vector<std::int64_t> order = phalanx::testing::global_order(plan, 0);
  std::set<std::int64_t> window_chunks;
  for (std::size_t position = 0; position < 30; ++position) window_chunks.insert(order[position] / 10);
  EXPECT_EQ(window_chunks.size(), 3u);
  std::vector<std::int64_t> sorted(order.begin(), order.begin() + 30);
  EXPECT_FALSE(std::is_sorted(sorted.begin(), sorted.end())) << "no shuffle inside the window";
}

}  // namespace
}  // namespace phalanx::data
