// StreamingSource: training samples read from the file while training runs (data.cache: none), for
// splits larger than the memory budget. It reads whole HDF5 chunks and keeps the few that the
// current shuffle windows touch (ShardOrder::Kind::ChunkWindows), so every chunk is read (and
// decompressed) about once per epoch by the one rank whose part contains it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "phalanx/data/sample_source.hpp"
#include "phalanx/data/split_range_reader.hpp"

namespace phalanx::data {

class StreamingSource final : public SampleSource {
 public:
  // `window_bytes`: the shuffle window per rank in bytes of images, rounded to whole chunks (at
  // least one); the chunk cache holds about two windows.
  StreamingSource(std::unique_ptr<SplitRangeReader> reader, std::int64_t window_bytes);

  ShardOrder order() const override { return ShardOrder::chunk_windows(chunk_samples_, window_samples_); }
  void gather(const std::int64_t* indices, std::size_t n, std::uint8_t* images,
              std::int32_t* labels) override;

  std::int64_t chunk_samples() const { return chunk_samples_; }
  std::int64_t window_samples() const { return window_samples_; }
  std::int64_t chunks_read() const { return chunks_read_; }
  std::int64_t cached_chunks_limit() const { return capacity_; }

 private:
  struct Chunk {
    std::vector<std::uint8_t> images;
    std::vector<std::int32_t> labels;
    std::list<std::int64_t>::iterator age;  // place in recently_used_
  };
  const Chunk& chunk(std::int64_t index);

  std::unique_ptr<SplitRangeReader> reader_;
  std::int64_t chunk_samples_, window_samples_, capacity_;
  std::unordered_map<std::int64_t, Chunk> chunks_;
  std::list<std::int64_t> recently_used_;  // front: most recent
  std::int64_t chunks_read_ = 0;
};

}  // namespace phalanx::data
