// EpochOrder: the plan's orders, position by position. Permutation: position p holds the p-th
// entry of the epoch's permutation of the samples. ChunkWindows: the chunks in their epoch order
// form one sequence of samples; rank r's part is steps*b_r samples of it from steps*offset_r,
// shuffled within consecutive windows; global position step*G + offset_r + slot is its part's
// sample step*b_r + slot. The streams are those the plan drew from when it materialised every
// order, so the orders are unchanged sample for sample below the limit.
#include "phalanx/data/epoch_order.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/data/shard_plan.hpp"

namespace phalanx::data {
namespace {
// Stream ids of the data order, apart from the streams used for initialisation or augmentation.
constexpr std::uint64_t permutation_stream = 0x5348415244ull;  // "SHARD"
constexpr std::uint64_t chunk_stream = 0x4348554e4bull;        // "CHUNK"
constexpr std::uint64_t window_stream = 0x57494e444full;       // "WINDO"

void shuffle(std::int64_t* begin, std::int64_t* end, RandomStream& random) {
  for (auto index = static_cast<std::size_t>(end - begin); index > 1; --index)
    std::swap(begin[index - 1], begin[random.next_below(index)]);
}

// A permutation of [0, count) from (epoch_seed, stream): Fisher-Yates on the Philox stream, or
// per index keyed by the same pair.
void draw(std::int64_t count, bool per_index, std::uint64_t epoch_seed, std::uint64_t stream,
          std::vector<std::int64_t>& values, std::optional<IndexPermutation>& computed) {
  if (per_index) {
    computed.emplace(count, mix_seed(epoch_seed, stream));
    return;
  }
  values.resize(static_cast<std::size_t>(count));
  std::iota(values.begin(), values.end(), std::int64_t{0});
  RandomStream random(epoch_seed, stream);
  shuffle(values.data(), values.data() + count, random);
}
}  // namespace

std::int64_t EpochOrder::Permuted::operator()(std::int64_t position) const {
  return per_index ? (*per_index)(position) : values[static_cast<std::size_t>(position)];
}

std::int64_t EpochOrder::Permuted::inverse(std::int64_t value) const {
  if (per_index) return per_index->inverse(value);
  return std::find(values.begin(), values.end(), value) - values.begin();
}

EpochOrder::EpochOrder(const ShardPlan& plan, std::int64_t epoch)
    : epoch_(epoch),
      seed_(plan.seed()),
      epoch_seed_(mix_seed(plan.seed(), static_cast<std::uint64_t>(epoch))) {
  PHALANX_CHECK(epoch >= 0, "epoch ", epoch);
  const ShardOrder& order = plan.order();
  dataset_size_ = plan.dataset_size();
  if (order.kind == ShardOrder::Kind::Permutation) {
    size_ = dataset_size_;
    draw(dataset_size_, order.per_index_for(dataset_size_), epoch_seed_, permutation_stream, items_.values,
         items_.per_index);
    return;
  }
  chunk_windows_ = true;
  chunk_ = order.chunk_samples;
  window_ = order.window_samples;
  steps_ = plan.steps_per_epoch();
  global_batch_ = plan.global_batch();
  size_ = steps_ * global_batch_;
  for (int rank = 0; rank < plan.world_size(); ++rank) {
    batches_.push_back(plan.local_batch(rank));
    offsets_.push_back(plan.batch_offset(rank));
  }
  const std::int64_t chunk_count = (dataset_size_ + chunk_ - 1) / chunk_;
  draw(chunk_count, order.per_index_for(chunk_count), epoch_seed_, chunk_stream, items_.values,
       items_.per_index);
  last_chunk_ = chunk_count - 1;
  last_chunk_size_ = dataset_size_ - last_chunk_ * chunk_;
  // Only the file's last chunk may be short; where it falls shifts the samples after it (none
  // when it is whole: then its position is past the end).
  last_chunk_position_ = last_chunk_size_ == chunk_ ? chunk_count : items_.inverse(last_chunk_);
}

std::int64_t EpochOrder::at(std::int64_t position) {
  PHALANX_CHECK(position >= 0 && position < size_, "position ", position, " of an epoch order of ", size_);
  return chunk_windows_ ? chunk_windows_at(position) : items_(position);
}

std::int64_t EpochOrder::chunk_sequence_at(std::int64_t index) const {
  const std::int64_t short_begin = last_chunk_position_ * chunk_;
  if (index < short_begin) return items_(index / chunk_) * chunk_ + index % chunk_;
  if (index < short_begin + last_chunk_size_) return last_chunk_ * chunk_ + (index - short_begin);
  const std::int64_t after = index - short_begin - last_chunk_size_;
  return items_(last_chunk_position_ + 1 + after / chunk_) * chunk_ + after % chunk_;
}

std::int64_t EpochOrder::chunk_windows_at(std::int64_t position) {
  const std::int64_t step = position / global_batch_, within = position % global_batch_;
  const auto rank = static_cast<std::size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), within) -
                                             offsets_.begin() - 1);
  const std::int64_t batch = batches_[rank], part = steps_ * batch, part_offset = steps_ * offsets_[rank];
  const std::int64_t in_part = step * batch + (within - offsets_[rank]);
  const std::int64_t window = in_part / window_ * window_;
  if (window_begin_ != part_offset + window) {
    // Each window's stream is named by its place in the sequence: the order depends on
    // (seed, epoch) and the split only, never on which rank computes it.
    const std::int64_t length = std::min(part, window + window_) - window;
    window_values_.resize(static_cast<std::size_t>(length));
    // Within a chunk the sequence counts up: one lookup of the chunk order per chunk.
    const std::int64_t short_begin = last_chunk_position_ * chunk_,
                       short_end = short_begin + last_chunk_size_;
    for (std::int64_t index = 0; index < length; ++index) {
      const std::int64_t sequence_index = part_offset + window + index;
      const bool starts_chunk =
          index == 0 || sequence_index == short_begin || sequence_index == short_end ||
          (sequence_index < short_begin
               ? sequence_index % chunk_ == 0
               : sequence_index > short_end && (sequence_index - short_end) % chunk_ == 0);
      window_values_[static_cast<std::size_t>(index)] =
          starts_chunk ? chunk_sequence_at(sequence_index)
                       : window_values_[static_cast<std::size_t>(index) - 1] + 1;
    }
    RandomStream random(mix_seed(epoch_seed_, static_cast<std::uint64_t>(part_offset + window)),
                        window_stream);
    shuffle(window_values_.data(), window_values_.data() + length, random);
    window_begin_ = part_offset + window;
  }
  return window_values_[static_cast<std::size_t>(in_part - window)];
}

std::int64_t EpochOrder::held_bytes() const {
  const auto words =
      items_.values.capacity() + window_values_.capacity() + batches_.capacity() + offsets_.capacity();
  return static_cast<std::int64_t>(words * sizeof(std::int64_t));
}

}  // namespace phalanx::data
