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
constexpr std::uint64_t chunk_stream = 0x4348554e4bull;        // "CHUNK"
constexpr std::uint64_t window_stream = 0x57494e444full;       // "WINDO"

void shuffle(std::int64_t* begin, std::int64_t* end, RandomStream& random) {
  for (auto index = static_cast<std::size_t>(end - begin); index > 1; --index)
    std::swap(begin[index - 1], begin[random.next_below(index)]);
}
}  // namespace

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

std::vector<std::int64_t> ShardPlan::permutation(std::int64_t epoch) const {
  PHALANX_CHECK(epoch >= 0, "epoch ", epoch);
  if (order_.kind == ShardOrder::Kind::ChunkWindows) return chunk_window_order(epoch);
  std::vector<std::int64_t> order(static_cast<std::size_t>(dataset_size_));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  RandomStream random(mix_seed(seed_, static_cast<std::uint64_t>(epoch)), permutation_stream);
  for (std::size_t index = order.size(); index > 1; --index) {
    const std::size_t chosen = static_cast<std::size_t>(random.next_below(index));
    std::swap(order[index - 1], order[chosen]);
  }
  return order;
}

std::vector<std::int64_t> ShardPlan::chunk_window_order(std::int64_t epoch) const {
  const std::uint64_t epoch_seed = mix_seed(seed_, static_cast<std::uint64_t>(epoch));
  const std::int64_t chunk = order_.chunk_samples;
  const std::int64_t chunk_count = (dataset_size_ + chunk - 1) / chunk;
  std::vector<std::int64_t> chunks(static_cast<std::size_t>(chunk_count));
  std::iota(chunks.begin(), chunks.end(), std::int64_t{0});
  RandomStream chunk_random(epoch_seed, chunk_stream);
  shuffle(chunks.data(), chunks.data() + chunk_count, chunk_random);

  // The samples of the chunks in their shuffled order; only the first steps * G are trained on.
  const std::int64_t steps = steps_per_epoch(), used = steps * global_batch();
  std::vector<std::int64_t> sequence;
  sequence.reserve(static_cast<std::size_t>(dataset_size_));
  for (const std::int64_t index : chunks)
    for (std::int64_t sample = index * chunk; sample < std::min(dataset_size_, (index + 1) * chunk); ++sample)
      sequence.push_back(sample);
  sequence.resize(static_cast<std::size_t>(used));

  std::vector<std::int64_t> order(static_cast<std::size_t>(used));
  for (int rank = 0; rank < world_size_; ++rank) {
    const std::int64_t batch = local_batch(rank), part = steps * batch,
                       part_offset = steps * batch_offset(rank);
    std::int64_t* part_begin = sequence.data() + part_offset;
    for (std::int64_t window = 0; window < part; window += order_.window_samples) {
      // Each window's stream is named by its place in the sequence: the order depends on
      // (seed, epoch) and the split only, never on which rank computes it.
      RandomStream random(mix_seed(epoch_seed, static_cast<std::uint64_t>(part_offset + window)),
                          window_stream);
      shuffle(part_begin + window, part_begin + std::min(part, window + order_.window_samples), random);
    }
    for (std::int64_t position = 0; position < part; ++position) {
      const std::int64_t step = position / batch, slot = position % batch;
      order[static_cast<std::size_t>(step * global_batch() + batch_offset(rank) + slot)] =
          part_begin[position];
    }
  }
  return order;
}

std::vector<std::int64_t> ShardPlan::rank_indices(const std::vector<std::int64_t>& permutation,
                                                  std::int64_t step) const {
  const std::int64_t expected =
      order_.kind == ShardOrder::Kind::Permutation ? dataset_size_ : steps_per_epoch() * global_batch();
  PHALANX_CHECK(static_cast<std::int64_t>(permutation.size()) == expected, "permutation of ",
                permutation.size(), " for an order of ", expected);
  PHALANX_CHECK(step >= 0 && step < steps_per_epoch(), "step ", step, " of ", steps_per_epoch());
  const auto begin = permutation.begin() + step * global_batch() + batch_offset(rank_);
  return std::vector<std::int64_t>(begin, begin + local_batch());
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
