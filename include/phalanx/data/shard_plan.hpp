// ShardPlan: which samples each rank trains on. Each epoch has one global permutation, a pure
// function of (seed, epoch); global batch `step` is permutation[step*G .. (step+1)*G) with
// G = local_batch * world_size, and rank r takes the r-th slice of local_batch samples.
// Training drops the last partial global batch; evaluation uses contiguous per-rank ranges
// that cover every sample exactly once.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace phalanx::data {

class ShardPlan {
 public:
  ShardPlan(std::int64_t dataset_size, int local_batch, int rank, int world_size, std::uint64_t seed);

  std::int64_t steps_per_epoch() const;
  std::int64_t dataset_size() const { return dataset_size_; }
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  int local_batch() const { return local_batch_; }
  std::uint64_t seed() const { return seed_; }
  std::int64_t global_batch() const { return static_cast<std::int64_t>(local_batch_) * world_size_; }

  // The epoch's global permutation of [0, dataset_size) (Fisher-Yates on a Philox stream).
  std::vector<std::int64_t> permutation(std::int64_t epoch) const;
  // This rank's sample indices for (epoch, step), given that epoch's permutation.
  std::vector<std::int64_t> rank_indices(const std::vector<std::int64_t>& permutation,
                                         std::int64_t step) const;

  // Contiguous [begin, end) of the evaluation samples for `rank`; sizes differ by at most one.
  static std::pair<std::int64_t, std::int64_t> evaluation_range(std::int64_t dataset_size, int rank,
                                                                int world_size);

 private:
  std::int64_t dataset_size_;
  int local_batch_;
  int rank_;
  int world_size_;
  std::uint64_t seed_;
};

}  // namespace phalanx::data
