// The per-index epoch order (ShardOrder::Shuffle::PerIndex, what datasets above
// ShardOrder::materialised_limit get) keeps the plan's guarantees on small N: every sample once
// per epoch across ranks of unequal batches at world sizes 1, 2, 3 and 7, the same global order on
// every rank and world size (so a resume on other ranks continues at the same global position),
// a new order each epoch and seed, its values above the limit pinned; chunk windows keep each rank on
// one contiguous run of chunks and draw the chunk sequence anew each epoch.
// Below the limit the default stays the materialised Fisher-Yates order.
#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/core/allocator.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/data/loader.hpp"
#include "phalanx/data/shard_plan.hpp"

namespace phalanx::data {
namespace {

using phalanx::testing::global_order;

const ShardOrder per_index = ShardOrder{}.with_shuffle(ShardOrder::Shuffle::PerIndex);

const std::vector<std::vector<int>> splits = {
    {5}, {3, 8}, {1, 4, 2}, {3, 1, 4, 1, 5, 9, 2}, {2, 2, 2, 2, 2, 2, 2}};

TEST(EpochOrder, PerIndexSlicesCoverEachSampleOncePerEpoch) {
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    for (const auto& split : splits) {
      const std::int64_t global = std::accumulate(split.begin(), split.end(), std::int64_t{0});
      for (const std::int64_t extra : {std::int64_t{0}, std::int64_t{1}, global - 1}) {
        const std::int64_t dataset_size = global * 9 + extra;
        const int world_size = static_cast<int>(split.size());
        for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
          const std::vector<std::int64_t> expected =
              global_order(ShardPlan(dataset_size, split, 0, seed, per_index), epoch);
          std::vector<int> seen(static_cast<std::size_t>(dataset_size), 0);
          for (int rank = 0; rank < world_size; ++rank) {
            const ShardPlan plan(dataset_size, split, rank, seed, per_index);
            EpochOrder order = plan.epoch_order(epoch);
            ASSERT_TRUE(order.per_index());
            ASSERT_EQ(order.size(), dataset_size);
            for (std::int64_t step = 0; step < plan.steps_per_epoch(); ++step) {
              const std::vector<std::int64_t> indices = plan.rank_indices(order, step);
              ASSERT_EQ(indices.size(), static_cast<std::size_t>(split[static_cast<std::size_t>(rank)]));
              for (std::size_t slot = 0; slot < indices.size(); ++slot) {
                ASSERT_EQ(indices[slot],
                          expected[static_cast<std::size_t>(step * global + plan.batch_offset(rank)) + slot])
                    << "rank " << rank << " does not take its slice of the global order";
                ++seen[static_cast<std::size_t>(indices[slot])];
              }
            }
          }
          EXPECT_LE(*std::max_element(seen.begin(), seen.end()), 1) << "a sample twice in an epoch";
          EXPECT_EQ(std::accumulate(seen.begin(), seen.end(), std::int64_t{0}),
                    dataset_size / global * global)
              << "only the last partial global batch is dropped";
        }
      }
    }
  }
}

TEST(EpochOrder, PerIndexIsAPermutationThatChangesWithEpochAndSeed) {
  for (const std::int64_t dataset_size : {2, 3, 17, 64, 65, 1000}) {
    const ShardPlan plan(dataset_size, 1, 0, 1, 9, per_index);
    const std::vector<std::int64_t> epoch0 = global_order(plan, 0);
    std::vector<std::int64_t> sorted = epoch0, identity(static_cast<std::size_t>(dataset_size));
    std::sort(sorted.begin(), sorted.end());
    std::iota(identity.begin(), identity.end(), std::int64_t{0});
    EXPECT_EQ(sorted, identity);
    if (dataset_size < 17) continue;  // tiny orders can repeat by chance
    EXPECT_NE(global_order(plan, 1), epoch0);
    EXPECT_NE(global_order(ShardPlan(dataset_size, 1, 0, 1, 10, per_index), 0), epoch0);
    EXPECT_NE(epoch0, identity);
    // Another order than the materialised one of the same (seed, epoch).
    EXPECT_NE(global_order(ShardPlan(dataset_size, 1, 0, 1, 9), 0), epoch0);
  }
}

TEST(EpochOrder, ResumeOnAnotherWorldSizeContinuesAtTheSameGlobalPosition) {
  // Global batch 12 over 1, 2, 3 and 7 ranks (unequal where it does not divide), and global
  // batch 6 (elastic.global_batch: change) from the same sample: the samples from the resume
  // point on are the same, in the same order.
  const std::int64_t dataset_size = 12 * 40 + 5;
  const std::vector<std::vector<int>> world = {{12}, {7, 5}, {4, 4, 4}, {1, 2, 1, 3, 2, 2, 1}, {6}};
  for (const std::int64_t epoch : {0, 3}) {
    std::vector<std::int64_t> reference;
    for (const auto& split : world) {
      const std::int64_t global = std::accumulate(split.begin(), split.end(), std::int64_t{0});
      const std::int64_t resume_step = 17 * 12 / global;  // the checkpoint stood 17 * 12 samples in
      std::vector<std::int64_t> continued;
      const ShardPlan first(dataset_size, split, 0, 4, per_index);
      for (std::int64_t step = resume_step; step < first.steps_per_epoch(); ++step)
        for (int rank = 0; rank < static_cast<int>(split.size()); ++rank) {
          const ShardPlan plan(dataset_size, split, rank, 4, per_index);
          EpochOrder order = plan.epoch_order(epoch);
          const auto indices = plan.rank_indices(order, step);
          continued.insert(continued.end(), indices.begin(), indices.end());
        }
      continued.resize(12 * (40 - 17));  // global batch 6 reaches five samples further
      if (reference.empty()) reference = continued;
      EXPECT_EQ(continued, reference) << "split " << ::testing::PrintToString(split);
    }
  }
}

TEST(EpochOrder, DefaultIsTheMaterialisedOrderBelowTheLimit) {
  const ShardPlan plan(1000, 10, 0, 1, 3);
  EpochOrder order = plan.epoch_order(0);
  EXPECT_FALSE(order.per_index());
  EXPECT_EQ(
      global_order(plan, 0),
      global_order(ShardPlan(1000, 10, 0, 1, 3, ShardOrder{}.with_shuffle(ShardOrder::Shuffle::Materialised)),
                   0));
  EXPECT_FALSE(ShardOrder{}.per_index_for(ShardOrder::materialised_limit));
  EXPECT_TRUE(ShardOrder{}.per_index_for(ShardOrder::materialised_limit + 1));
  EXPECT_FALSE(per_index.with_shuffle(ShardOrder::Shuffle::Materialised)
                   .per_index_for(ShardOrder::materialised_limit * 4));
  // Above the limit the default computes per index: constructing it allocates no permutation.
  const ShardPlan large(ShardOrder::materialised_limit + 1, 10, 0, 1, 3);
  EpochOrder large_order = large.epoch_order(0);
  EXPECT_TRUE(large_order.per_index());
  EXPECT_LT(large_order.held_bytes(), 1024);
  // Chunk windows decide on the number of chunks.
  const ShardPlan chunked(ShardOrder::materialised_limit * 2, 10, 0, 1, 3, ShardOrder::chunk_windows(1, 64));
  EXPECT_TRUE(chunked.epoch_order(0).per_index());
  const ShardPlan few_chunks(ShardOrder::materialised_limit * 2, 10, 0, 1, 3,
                             ShardOrder::chunk_windows(64, 64));
  EpochOrder few = few_chunks.epoch_order(0);
  EXPECT_FALSE(few.per_index());
  EXPECT_LE(few.held_bytes(), (ShardOrder::materialised_limit * 2 / 64 + 1024) * 8)
      << "more than the chunk order";
}

// The order below the limit, written out here independently: Fisher-Yates on the Philox stream
// "SHARD" of (seed, epoch), as the plan drew it before orders were computed per index, so runs
// and checkpoints of datasets below the limit keep their trajectories.
TEST(EpochOrder, BelowTheLimitTheOrderIsTheFisherYatesOneRunsHaveHad) {
  for (const std::int64_t dataset_size : {7, 103, 4096}) {
    for (std::uint64_t seed = 0; seed < 3; ++seed) {
      for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
        std::vector<std::int64_t> expected(static_cast<std::size_t>(dataset_size));
        std::iota(expected.begin(), expected.end(), std::int64_t{0});
        RandomStream random(mix_seed(seed, static_cast<std::uint64_t>(epoch)), 0x5348415244ull);
        for (std::size_t index = expected.size(); index > 1; --index)
          std::swap(expected[index - 1], expected[static_cast<std::size_t>(random.next_below(index))]);
        EXPECT_EQ(global_order(ShardPlan(dataset_size, 1, 0, 1, seed), epoch), expected);
        EXPECT_EQ(global_order(ShardPlan(dataset_size, std::vector<int>{2, 5}, 1, seed), epoch), expected);
      }
    }
  }
}

// The order above the limit, pinned: a run's checkpoints resume into the order it was trained in,
// so a change to the permutation's rounds, constants or key derivation (which the properties above
// would all still pass) must fail here rather than silently reorder the rest of a running epoch.
// Rank 1 of local batches {3, 5}, seed 11: steps 0, 1 and the last, epochs 0 and 5.
TEST(EpochOrder, AboveTheLimitTheOrderIsPinned) {
  struct Pinned {
    std::int64_t dataset_size, epoch;
    std::vector<std::int64_t> indices;
  };
  const std::vector<Pinned> pinned = {
      {ShardOrder::materialised_limit + 1,
       0,
       {8548828, 10722200, 319872, 16172165, 9789331, 9775846, 9070614, 887686, 12354248, 14098523, 14255237,
        11765983, 168297, 10514229, 8200065}},
      {ShardOrder::materialised_limit + 1,
       5,
       {2624310, 5398278, 9211299, 6929204, 4514821, 5979299, 10899101, 13211100, 3571575, 7094036, 572690,
        8950250, 9073086, 4202308, 8856767}},
      {10'000'000'000,
       0,
       {480925861, 2054267602, 3233660405, 9581157524, 5446234339, 8405211832, 6648081852, 2990780886,
        6822016029, 8287607015, 3711513945, 3013806967, 1372605418, 1915272855, 3061358281}},
      {10'000'000'000,
       5,
       {924863460, 940275474, 5376848162, 265169704, 9548035568, 4835355458, 894631, 2015771640, 9572325686,
        1272688730, 8181581342, 9393488604, 7776300242, 5306918894, 9534366784}}};
  for (const Pinned& expected : pinned) {
    const ShardPlan plan(expected.dataset_size, std::vector<int>{3, 5}, 1, 11);
    EpochOrder order = plan.epoch_order(expected.epoch);
    ASSERT_TRUE(order.per_index());
    std::vector<std::int64_t> indices;
    for (const std::int64_t step : {std::int64_t{0}, std::int64_t{1}, plan.steps_per_epoch() - 1}) {
      const auto batch = plan.rank_indices(order, step);
      indices.insert(indices.end(), batch.begin(), batch.end());
    }
    EXPECT_EQ(indices, expected.indices) << expected.dataset_size << " samples, epoch " << expected.epoch;
  }
  // Streamed in chunks of 64 with windows of 4096: more chunks than the limit, so the chunk
  // sequence is computed per index as well (epoch 2, steps 0 and 123456789).
  const ShardPlan streamed(10'000'000'000, std::vector<int>{3, 5}, 1, 11,
                           ShardOrder::chunk_windows(64, 4096));
  EpochOrder order = streamed.epoch_order(2);
  ASSERT_TRUE(order.per_index());
  std::vector<std::int64_t> indices = streamed.rank_indices(order, 0);
  const auto later = streamed.rank_indices(order, 123456789);
  indices.insert(indices.end(), later.begin(), later.end());
  EXPECT_EQ(indices, (std::vector<std::int64_t>{5694220285, 6274776935, 5694220233, 6274776897, 6274776943,
                                                7327473132, 3082902070, 8066154102, 1768726463, 6579844918}));
}

TEST(EpochOrder, PerIndexChunkWindowsKeepEachRankOnOneRunOfChunks) {
  for (std::uint64_t seed = 0; seed < 3; ++seed)
    for (const auto& split : splits)
      for (const std::int64_t chunk : {1, 4, 7}) {
        const std::int64_t global = std::accumulate(split.begin(), split.end(), std::int64_t{0});
        const std::int64_t dataset_size = global * 6 + 5;
        const ShardOrder order =
            ShardOrder::chunk_windows(chunk, chunk * 2).with_shuffle(ShardOrder::Shuffle::PerIndex);
        const ShardPlan first(dataset_size, split, 0, seed, order);
        const std::vector<std::int64_t> expected = global_order(first, 1);
        ASSERT_EQ(expected.size(), static_cast<std::size_t>(first.steps_per_epoch() * global));
        std::set<std::int64_t> seen;
        for (int rank = 0; rank < static_cast<int>(split.size()); ++rank) {
          const ShardPlan plan(dataset_size, split, rank, seed, order);
          EpochOrder own = plan.epoch_order(1);
          ASSERT_TRUE(own.per_index());
          std::set<std::int64_t> rank_chunks;
          for (std::int64_t step = 0; step < plan.steps_per_epoch(); ++step) {
            const auto indices = plan.rank_indices(own, step);
            for (std::size_t slot = 0; slot < indices.size(); ++slot) {
              ASSERT_EQ(indices[slot],
                        expected[static_cast<std::size_t>(step * global + plan.batch_offset(rank)) + slot]);
              ASSERT_TRUE(seen.insert(indices[slot]).second) << "sample " << indices[slot] << " twice";
              rank_chunks.insert(indices[slot] / chunk);
            }
          }
          const std::int64_t part = plan.steps_per_epoch() * split[static_cast<std::size_t>(rank)];
          EXPECT_LE(static_cast<std::int64_t>(rank_chunks.size()), part / chunk + 3);
        }
        EXPECT_EQ(static_cast<std::int64_t>(seen.size()), first.steps_per_epoch() * global);
        if (dataset_size / chunk >= 8) {
          EXPECT_NE(global_order(first, 2), expected) << "same chunk order in two epochs";
        }
      }
}

// The chunk sequence is drawn anew each epoch: each rank's run of chunks moves, and the samples a
// partial last global batch leaves out are other ones each epoch (the same ones every epoch would
// never be trained on). A new window shuffle alone would keep both.
TEST(EpochOrder, PerIndexChunkWindowsDrawTheChunkSequenceEachEpoch) {
  const std::int64_t chunk = 4, dataset_size = 12 * 50 + 7;
  const ShardOrder order =
      ShardOrder::chunk_windows(chunk, chunk * 2).with_shuffle(ShardOrder::Shuffle::PerIndex);
  const std::vector<int> split{7, 5};
  std::set<std::set<std::int64_t>> rank0_chunks_per_epoch, left_out_per_epoch;
  for (std::int64_t epoch = 0; epoch < 4; ++epoch) {
    const ShardPlan plan(dataset_size, split, 0, 3, order);
    const std::vector<std::int64_t> global = global_order(plan, epoch);
    std::set<std::int64_t> rank0_chunks, left_out;
    for (std::int64_t index = 0; index < dataset_size; ++index) left_out.insert(index);
    for (std::size_t position = 0; position < global.size(); ++position) {
      left_out.erase(global[position]);
      if (static_cast<std::int64_t>(position % 12) < split[0]) rank0_chunks.insert(global[position] / chunk);
    }
    ASSERT_EQ(left_out.size(), 7u);
    rank0_chunks_per_epoch.insert(rank0_chunks);
    left_out_per_epoch.insert(left_out);
  }
  EXPECT_EQ(rank0_chunks_per_epoch.size(), 4u) << "rank 0 read the same chunks in two epochs";
  EXPECT_EQ(left_out_per_epoch.size(), 4u) << "the same samples left out in two epochs";
}

TEST(EpochOrder, LoaderDeliversThePerIndexOrder) {
  const auto split = std::make_shared<Split>(phalanx::testing::make_split("train", 53, 4, 3, 1, 10, 2));
  const ShardPlan plan(53, std::vector<int>{2, 5}, 1, 8, per_index);
  Loader loader(split, plan, 2, 1, 3, 3, HostAllocator::instance());
  const auto image_bytes = static_cast<std::size_t>(split->image_bytes());
  for (std::int64_t epoch = 1; epoch < 3; ++epoch) {
    EpochOrder order = plan.epoch_order(epoch);
    for (std::int64_t step = epoch == 1 ? 3 : 0; step < plan.steps_per_epoch(); ++step) {
      const Batch* batch = loader.next();
      ASSERT_NE(batch, nullptr);
      const auto indices = plan.rank_indices(order, step);
      ASSERT_EQ(batch->size, 5);
      for (std::size_t slot = 0; slot < indices.size(); ++slot) {
        EXPECT_EQ(batch->labels[slot], split->labels[static_cast<std::size_t>(indices[slot])]);
        EXPECT_EQ(std::memcmp(batch->images + slot * image_bytes,
                              split->images.data() + static_cast<std::size_t>(indices[slot]) * image_bytes,
                              image_bytes),
                  0);
      }
    }
  }
  EXPECT_EQ(loader.next(), nullptr);
}

}  // namespace
}  // namespace phalanx::data
