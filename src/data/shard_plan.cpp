// ShardPlan: the one place that decides which samples each rank sees. The epoch permutation is a
// pure function of (seed, epoch) drawn from a Philox stream, so every rank computes the same one
// without communicating, and a resumed run or a run on another world size sees the same order.
#include "phalanx/data/shard_plan.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::data {
namespace {
// Stream id of the data order, apart from the streams used for initialisation or augmentation.
constexpr std::uint64_t permutation_stream = 0x5348415244ull;  // "SHARD"
}  // namespace

ShardPlan::ShardPlan(std::int64_t dataset_size, int local_batch, int rank, int world_size, std::uint64_t seed)
    : dataset_size_(dataset_size),
      local_batch_(local_batch),
      rank_(rank),
      world_size_(world_size),
      seed_(seed) {
  PHALANX_CHECK(local_batch >= 1, "local batch ", local_batch);
  PHALANX_CHECK(world_size >= 1, "world size ", world_size);
  PHALANX_CHECK(rank >= 0 && rank < world_size, "rank ", rank, " of ", world_size);
  PHALANX_CHECK(dataset_size >= 0, "dataset size ", dataset_size);
  if (dataset_size < global_batch())
    throw_input_error("the training data has " + std::to_string(dataset_size) +
                      " samples, fewer than one global batch of " + std::to_string(global_batch()) +
                      " (local batch " + std::to_string(local_batch) + " x " + std::to_string(world_size) +
                      " ranks): lower the batch size or use more data");
}

std::int64_t ShardPlan::steps_per_epoch() const {
  return dataset_size_ / global_batch();
}

std::vector<std::int64_t> ShardPlan::permutation(std::int64_t epoch) const {
  PHALANX_CHECK(epoch >= 0, "epoch ", epoch);
  std::vector<std::int64_t> order(static_cast<std::size_t>(dataset_size_));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  RandomStream random(mix_seed(seed_, static_cast<std::uint64_t>(epoch)), permutation_stream);
  for (std::size_t index = order.size(); index > 1; --index) {
    const std::size_t chosen = static_cast<std::size_t>(random.next_below(index));
    std::swap(order[index - 1], order[chosen]);
  }
  return order;
}

std::vector<std::int64_t> ShardPlan::rank_indices(const std::vector<std::int64_t>& permutation,
                                                  std::int64_t step) const {
  PHALANX_CHECK(static_cast<std::int64_t>(permutation.size()) == dataset_size_, "permutation of ",
                permutation.size(), " for a dataset of ", dataset_size_);
  PHALANX_CHECK(step >= 0 && step < steps_per_epoch(), "step ", step, " of ", steps_per_epoch());
  const auto begin =
      permutation.begin() + step * global_batch() + static_cast<std::int64_t>(rank_) * local_batch_;
  return std::vector<std::int64_t>(begin, begin + local_batch_);
}

std::pair<std::int64_t, std::int64_t> ShardPlan::evaluation_range(std::int64_t dataset_size, int rank,
                                                                  int world_size) {
  PHALANX_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, "rank ", rank, " of ", world_size);
  PHALANX_CHECK(dataset_size >= 0, "dataset size ", dataset_size);
  // The first `remainder` ranks take one sample more, so sizes differ by at most one.
  const std::int64_t base = dataset_size / world_size, remainder = dataset_size % world_size;
  const std::int64_t begin = rank * base + std::min<std::int64_t>(rank, remainder);
  return {begin, begin + base + (rank < remainder ? 1 : 0)};
}

}  // namespace phalanx::data
