// ShardPlan: which samples each rank trains on. Each epoch has one global order (EpochOrder), a
// pure function of (seed, epoch); global batch `step` is its positions [step*G, (step+1)*G) with
// G = b_0 + ... + b_{W-1} (the ranks' local batches; b_r = local_batch for all r in the equal
// split), and rank r takes the slice [offset_r, offset_r + b_r) of it, offset_r = b_0 + ... +
// b_{r-1}. Ranks of unequal speed (docs/DESIGN.md §3) get unequal b_r.
// Training drops the last partial global batch; evaluation uses contiguous per-rank ranges
// that cover every sample exactly once.
//
// Streaming from a file (data.cache: none) cannot afford a full permutation, which reads one
// sample here and one there. ShardOrder::Kind::ChunkWindows draws instead, per (seed, epoch): a
// permutation of the file's chunks; their samples in that order form one sequence, whose first
// steps*G samples are cut into one contiguous part per rank (rank r: steps*b_r samples from
// steps*offset_r, so each rank reads about b_r/G of the file, in whole chunks); each part is
// shuffled within consecutive windows of window_samples; rank r's batch `step` is its part's
// samples [step*b_r, (step+1)*b_r).
// Each sample still appears at most once per epoch across ranks (exactly once but for fewer than
// G dropped each epoch, which change with the chunk order), and every rank computes the same
// global order. docs/DATA.md says what this gives up against a full permutation.
//
// The permutation (of the samples, or of the chunks) is drawn by Fisher-Yates and held in memory
// up to ShardOrder::materialised_limit items; above it, so that a plan over 10^10 samples stays a
// few words, it is a keyed bijection computed per index (IndexPermutation).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "phalanx/data/epoch_order.hpp"

namespace phalanx::data {

struct ShardOrder {
  enum class Kind { Permutation, ChunkWindows };
  // How the permutation is drawn: by its size (the default), or, for tests and benchmarks of
  // either path at any size, always one way.
  enum class Shuffle { BySize, Materialised, PerIndex };
  // Up to this many permuted items (16 Mi: 128 MiB of indices per rank) the order is the
  // materialised Fisher-Yates permutation every run has had; above it, per index.
  static constexpr std::int64_t materialised_limit = std::int64_t{1} << 24;

  Kind kind = Kind::Permutation;
  std::int64_t chunk_samples = 0;   // ChunkWindows: samples per storage chunk along N
  std::int64_t window_samples = 0;  // ChunkWindows: shuffle window within each rank's part
  Shuffle shuffle = Shuffle::BySize;

  static ShardOrder chunk_windows(std::int64_t chunk_samples, std::int64_t window_samples) {
    return {Kind::ChunkWindows, chunk_samples, window_samples};
  }
  ShardOrder with_shuffle(Shuffle chosen) const {
    ShardOrder copy = *this;
    copy.shuffle = chosen;
    return copy;
  }
  // The order in words, the same for every run that takes an epoch's samples in the same order
  // ("permutation", or the chunk and window sizes of streaming): a checkpoint stores it, and a
  // resume mid-epoch must find its own the same, or it would repeat some samples and skip others.
  std::string describe() const;
  // Whether a permutation of `count` items is computed per index.
  bool per_index_for(std::int64_t count) const {
    return shuffle == Shuffle::PerIndex || (shuffle == Shuffle::BySize && count > materialised_limit);
  }
};

class ShardPlan {
 public:
  // The equal split: every rank takes `local_batch`.
  ShardPlan(std::int64_t dataset_size, int local_batch, int rank, int world_size, std::uint64_t seed,
            ShardOrder order = {});
  // One local batch per rank (world_size = local_batches.size(), each >= 1).
  ShardPlan(std::int64_t dataset_size, std::vector<int> local_batches, int rank, std::uint64_t seed,
            ShardOrder order = {});

  std::int64_t steps_per_epoch() const;
  std::int64_t dataset_size() const { return dataset_size_; }
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // This rank's local batch, and any rank's.
  int local_batch() const { return local_batches_[static_cast<std::size_t>(rank_)]; }
  int local_batch(int rank) const { return local_batches_[static_cast<std::size_t>(rank)]; }
  const std::vector<int>& local_batches() const { return local_batches_; }
  // Where `rank`'s slice starts within a global batch.
  std::int64_t batch_offset(int rank) const { return offsets_[static_cast<std::size_t>(rank)]; }
  std::uint64_t seed() const { return seed_; }
  std::int64_t global_batch() const { return global_batch_; }
  const ShardOrder& order() const { return order_; }

  // The epoch's global order: Permutation: a permutation of [0, dataset_size); ChunkWindows: the
  // steps_per_epoch * global_batch samples trained on, in order. Take it once per epoch: below
  // the limit it draws the whole permutation.
  EpochOrder epoch_order(std::int64_t epoch) const { return EpochOrder(*this, epoch); }
  // This rank's sample indices for `step` of `order`'s epoch.
  std::vector<std::int64_t> rank_indices(EpochOrder& order, std::int64_t step) const;

  // Contiguous [begin, end) of the evaluation samples for `rank`; sizes differ by at most one.
  static std::pair<std::int64_t, std::int64_t> evaluation_range(std::int64_t dataset_size, int rank,
                                                                int world_size);

 private:
  std::int64_t dataset_size_;
  std::vector<int> local_batches_;
  std::vector<std::int64_t> offsets_;  // prefix sums of local_batches_
  std::int64_t global_batch_ = 0;
  int rank_;
  int world_size_;
  std::uint64_t seed_;
  ShardOrder order_;
};

}  // namespace phalanx::data
