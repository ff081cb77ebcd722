// StreamingSource: whole-chunk reads into a small least-recently-used chunk cache. The chunk
// windows order makes each rank walk its part of the shuffled chunk sequence front to back, so
// the cache only has to hold the chunks of the window being consumed and of the next one.
#include "streaming_source.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "phalanx/core/error.hpp"

namespace phalanx::data {

StreamingSource::StreamingSource(std::unique_ptr<SplitRangeReader> reader, std::int64_t window_bytes)
    : SampleSource(reader->split().name, reader->split().count, reader->split().height, reader->split().width,
                   reader->split().channels),
      reader_(std::move(reader)) {
  chunk_samples_ =
      std::max<std::int64_t>(1, std::min(reader_->chunk_samples(), std::max<std::int64_t>(1, count)));
  const std::int64_t chunk_bytes = chunk_samples_ * std::max<std::int64_t>(1, image_bytes());
  const std::int64_t window_chunks = std::max<std::int64_t>(1, window_bytes / chunk_bytes);
  window_samples_ = window_chunks * chunk_samples_;
  // A window that starts inside a chunk spans window_chunks + 1 chunks; a batch may straddle two
  // windows.
  capacity_ = 2 * (window_chunks + 1) + 1;
}

const StreamingSource::Chunk& StreamingSource::chunk(std::int64_t index) {
  if (auto found = chunks_.find(index); found != chunks_.end()) {
    recently_used_.splice(recently_used_.begin(), recently_used_, found->second.age);
    return found->second;
  }
  if (static_cast<std::int64_t>(chunks_.size()) >= capacity_) {
    chunks_.erase(recently_used_.back());
    recently_used_.pop_back();
  }
  const std::int64_t begin = index * chunk_samples_, end = std::min(count, begin + chunk_samples_);
  Chunk loaded;
  loaded.images.resize(static_cast<std::size_t>((end - begin) * image_bytes()));
  loaded.labels.resize(static_cast<std::size_t>(end - begin));
  reader_->read(begin, end, loaded.images.data(), loaded.labels.data());
  ++chunks_read_;
  recently_used_.push_front(index);
  loaded.age = recently_used_.begin();
  return chunks_.emplace(index, std::move(loaded)).first->second;
}

void StreamingSource::gather(const std::int64_t* indices, std::size_t n, std::uint8_t* images,
                             std::int32_t* labels) {
  const auto sample_bytes = static_cast<std::size_t>(image_bytes());
  for (std::size_t position = 0; position < n; ++position) {
    const std::int64_t sample = indices[position];
    PHALANX_CHECK(sample >= 0 && sample < count, "sample ", sample, " of ", count);
    const Chunk& source = chunk(sample / chunk_samples_);
    const auto offset = static_cast<std::size_t>(sample % chunk_samples_);
    std::memcpy(images + position * sample_bytes, source.images.data() + offset * sample_bytes, sample_bytes);
    labels[position] = source.labels[offset];
  }
}

}  // namespace phalanx::data
