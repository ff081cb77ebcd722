// EpochOrder: one epoch's global sample order under a ShardPlan, asked for one position at a time,
// so that no caller needs the whole order in memory. Up to ShardOrder::materialised_limit
// permuted items it holds the Fisher-Yates permutation the plan always drew; above that it holds
// a keyed IndexPermutation of a few words, whatever the dataset size.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "phalanx/data/index_permutation.hpp"

namespace phalanx::data {

class ShardPlan;

class EpochOrder {
 public:
  EpochOrder(const ShardPlan& plan, std::int64_t epoch);

  std::int64_t epoch() const { return epoch_; }
  std::uint64_t seed() const { return seed_; }
  // Positions in the order: every sample (Permutation), or the steps * global_batch samples
  // trained on (ChunkWindows).
  std::int64_t size() const { return size_; }
  bool per_index() const { return items_.per_index.has_value(); }
  // The sample at `position` of the global sequence. Not const: chunk windows keep the last
  // window they shuffled, as consecutive positions of a rank fall in the same window.
  std::int64_t at(std::int64_t position);
  // Bytes this order holds on the heap (the materialised permutation, the chunk order, the window).
  std::int64_t held_bytes() const;

 private:
  // A permutation of [0, count): materialised (Fisher-Yates) or computed per index.
  struct Permuted {
    std::vector<std::int64_t> values;
    std::optional<IndexPermutation> per_index;
    std::int64_t operator()(std::int64_t position) const;
    std::int64_t inverse(std::int64_t value) const;
  };
  std::int64_t chunk_sequence_at(std::int64_t index) const;
  std::int64_t chunk_windows_at(std::int64_t position);

  std::int64_t epoch_;
  std::uint64_t seed_;
  std::int64_t size_ = 0;
  bool chunk_windows_ = false;
  std::uint64_t epoch_seed_ = 0;
  Permuted items_;  // the samples (Permutation) or the chunks (ChunkWindows)

  // ChunkWindows only: the plan's geometry (a few words per rank) and the last shuffled window.
  std::int64_t dataset_size_ = 0, chunk_ = 0, window_ = 0, steps_ = 0, global_batch_ = 0;
  std::vector<std::int64_t> batches_, offsets_;
  std::int64_t last_chunk_ = 0, last_chunk_size_ = 0, last_chunk_position_ = 0;
  std::int64_t window_begin_ = -1;  // index in the chunk sequence where window_values_ starts
  std::vector<std::int64_t> window_values_;
};

}  // namespace phalanx::data
