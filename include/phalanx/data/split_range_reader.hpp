// SplitRangeReader: one split held open for reading ranges of samples as NHWC uint8 images and
// int32 labels, whatever the file looks like underneath: a phalanx dataset (SplitReader) or a
// user's own HDF5 files mapped by data.source (MappedSplitReader). The caches, the streaming
// source and evaluation read through this interface only, so every data.cache mode, sharding,
// augmentation and resume work the same on both.
#pragma once

#include <cstdint>
#include <string>

#include "phalanx/data/dataset.hpp"

namespace phalanx::data {

class SplitRangeReader {
 public:
  SplitRangeReader() = default;
  virtual ~SplitRangeReader() = default;
  SplitRangeReader(const SplitRangeReader&) = delete;
  SplitRangeReader& operator=(const SplitRangeReader&) = delete;

  virtual const DatasetInfo::SplitInfo& split() const = 0;
  std::int64_t image_bytes() const {
    return static_cast<std::int64_t>(split().height) * split().width * split().channels;
  }
  // Samples that one read of the underlying storage brings in (the HDF5 chunk along N): the
  // streaming source reads whole multiples of it. A contiguous dataset has no chunks: reads of
  // contiguous_read_bytes of samples stand for them.
  virtual std::int64_t chunk_samples() const = 0;
  static constexpr std::int64_t contiguous_read_bytes = std::int64_t{4} << 20;

  // Reads samples [begin, end) into `images` (NHWC uint8) and `labels`, validated against the
  // class count. Input errors name the file, the dataset and the sample. With MPI-IO (a native
  // file in a parallel-HDF5 build) every rank calls it together.
  virtual void read(std::int64_t begin, std::int64_t end, std::uint8_t* images, std::int32_t* labels) const = 0;
  // Checks the labels of samples [begin, end) against the class count, reading no images: a
  // streamed split meets a bad label only when its reads get there, by then mid-run. Not
  // collective. Input errors as read().
  virtual void check_labels(std::int64_t begin, std::int64_t end) const = 0;
};

}  // namespace phalanx::data
