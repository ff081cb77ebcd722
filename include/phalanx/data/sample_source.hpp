// SampleSource: where the loader thread gets training samples from, whichever way the split is
// cached (data.cache): the whole split in this rank's memory (`rank`), one copy per node in
// shared memory (`node`), or read from the file chunk by chunk (`none`). The describing fields
// mirror Split's so code that only needs the shape reads them the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "phalanx/data/dataset.hpp"
#include "phalanx/data/shard_plan.hpp"

namespace phalanx::data {

class SampleSource {
 public:
  SampleSource(std::string name, std::int64_t count, int height, int width, int channels)
      : name(std::move(name)), count(count), height(height), width(width), channels(channels) {}
  virtual ~SampleSource() = default;
  SampleSource(const SampleSource&) = delete;
  SampleSource& operator=(const SampleSource&) = delete;

  const std::string name;
  const std::int64_t count;
  const int height, width, channels;
  std::int64_t image_bytes() const { return static_cast<std::int64_t>(height) * width * channels; }
  std::string cache_description;  // how the split is held, for the log (set by open_training_source)

  // The epoch order this source can serve efficiently: a full permutation for random-access
  // memory, chunk windows for a file read in chunks.
  virtual ShardOrder order() const { return {}; }

  // Copies the samples `indices` (in that order) to `images` [n, H, W, C] and `labels` [n]. Called
  // from the loader thread only, one call at a time, in training order.
  virtual void gather(const std::int64_t* indices, std::size_t n, std::uint8_t* images,
                      std::int32_t* labels) = 0;
};

// A source over bytes that are all in memory: a Split of this rank, or a node-shared copy. `owner`
// keeps the memory alive as long as the source.
class MemorySource final : public SampleSource {
 public:
  MemorySource(std::string name, std::int64_t count, int height, int width, int channels,
               const std::uint8_t* images, const std::int32_t* labels, std::shared_ptr<const void> owner);
  // The rank cache: this rank's own copy of the split.
  static std::shared_ptr<MemorySource> of_split(std::shared_ptr<const Split> split);

  void gather(const std::int64_t* indices, std::size_t n, std::uint8_t* images,
              std::int32_t* labels) override;

 private:
  const std::uint8_t* images_;
  const std::int32_t* labels_;
  std::shared_ptr<const void> owner_;
};

}  // namespace phalanx::data
