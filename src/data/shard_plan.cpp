// ShardPlan: the one place that decides which samples each rank sees. The epoch order (EpochOrder)
// is a pure function of (seed, epoch) drawn from Philox, so every rank computes the same one
// without communicating, and a resumed run or a run on another world size sees the same order.
#include "phalanx/data/shard_plan.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "phalanx/core/error.hpp"

namespace phalanx::data {

std::string ShardOrder::describe() const {
  if (kind == Kind::Permutation) return "permutation";
  return "chunk windows (" + std::to_string(chunk_samples) + " samples per chunk, " +
         std::to_string(window_samples) + " per window)";
}

ShardPlan::ShardPlan(std::int64_t dataset_size, int local_batch, int rank, int world_size, std::uint64_t seed,
                     ShardOrder order)
    : ShardPlan(dataset_size,
                std::vector<int>(static_cast<std::size_t>(std::max(world_size, 0)), local_batch), rank, seed,
                order) {
  PHALANX_CHECK(world_size >= 1, "world size ", world_size);
}

ShardPlan::ShardPlan(std::int64_t dataset_size, std::vector<int> local_batches, int rank, std::uint64_t seed,
                     ShardOrder order)
    : dataset_size_(dataset_size),
      local_batches_(std::move(local_batches)),
      rank_(rank),
      world_size_(static_cast<int>(local_batches_.size())),
      seed_(seed),
      order_(order) {
  PHALANX_CHECK(
      order.kind == ShardOrder::Kind::Permutation || (order.chunk_samples >= 1 && order.window_samples >= 1),
      "chunk ", order.chunk_samples, " window ", order.window_samples);
  PHALANX_CHECK(world_size_ >= 1, "world size ", world_size_);
  PHALANX_CHECK(rank >= 0 && rank < world_size_, "rank ", rank, " of ", world_size_);
  PHALANX_CHECK(dataset_size >= 0, "dataset size ", dataset_size);
  for (const int batch : local_batches_) {
    PHALANX_CHECK(batch >= 1, "local batch ", batch);
    offsets_.push_back(global_batch_);
    global_batch_ += batch;
  }
  if (dataset_size < global_batch()) {
    const bool equal = std::all_of(local_batches_.begin(), local_batches_.end(),
                                   [&](int batch) { return batch == local_batches_[0]; });
    std::string split;
    for (const int batch : local_batches_) split += (split.empty() ? "" : ", ") + std::to_string(batch);
    throw_input_error("the training data has " + std::to_string(dataset_size) +
                      " samples, fewer than one global batch of " + std::to_string(global_batch()) + " (" +
                      (equal ? "local batch " + std::to_string(local_batches_[0]) + " x " +
                                   std::to_string(world_size_) + " ranks"
                             : "local batches [" + split + "]") +
                      "): lower the batch size or use more data");
  }
}

std::int64_t ShardPlan::steps_per_epoch() const {
  return dataset_size_ / global_batch();
}

std::vector<std::int64_t> ShardPlan::rank_indices(EpochOrder& order, std::int64_t step) const {
  const std::int64_t expected =
      order_.kind == ShardOrder::Kind::Permutation ? dataset_size_ : steps_per_epoch() * global_batch();
  PHALANX_CHECK(order.size() == expected && order.seed() == seed_, "epoch order of ", order.size(), " (seed ",
                order.seed(), ") for a plan of ", expected, " (seed ", seed_, ")");
  PHALANX_CHECK(step >= 0 && step < steps_per_epoch(), "step ", step, " of ", steps_per_epoch());
  std::vector<std::int64_t> indices(static_cast<std::size_t>(local_batch()));
  const std::int64_t begin = step * global_batch() + batch_offset(rank_);
  for (std::size_t slot = 0; slot < indices.size(); ++slot)
    indices[slot] = order.at(begin + static_cast<std::int64_t>(slot));
  return indices;
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
