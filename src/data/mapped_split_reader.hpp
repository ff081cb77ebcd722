// MappedSplitReader: ranged reads of one split of a mapped source (data.source), converted on the
// fly to what the pipeline takes: NHWC uint8 images (NCHW and NHW rearranged, float pixels scaled
// and rounded) and int32 labels (index labels as stored, a one-hot row as the index of its 1;
// checked when MappedSource opened them and again as read). Runs of consecutive stored rows become
// one hyperslab read of images each, so a carved split still reads sequentially; a carved split's
// labels come from memory, any other's from the file, in blocks. The image dataset's
// chunk cache is sized to the chunk band a read touches. Every call holds the HDF5 lock, so the
// streaming loader thread may use it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "phalanx/data/hdf5_handle.hpp"
#include "mapped_source.hpp"
#include "phalanx/data/split_range_reader.hpp"

namespace phalanx::data {

class MappedSplitReader final : public SplitRangeReader {
 public:
  MappedSplitReader(std::shared_ptr<const MappedSource> source, const std::string& split_name);
  ~MappedSplitReader() override;

  const DatasetInfo::SplitInfo& split() const override { return split_.info; }
  std::int64_t chunk_samples() const override;
  void read(std::int64_t begin, std::int64_t end, std::uint8_t* images, std::int32_t* labels) const override;
  // Every label was checked when the source was opened (mapped_source.cpp), and is checked again
  // as read_label_rows reads it.
  void check_labels(std::int64_t, std::int64_t) const override {}

 private:
  // Reads stored rows [row, row + count) and writes them as NHWC uint8 to `images`.
  void read_rows(std::int64_t row, std::int64_t count, std::uint8_t* images) const;
  // Reads the labels of stored rows [row, row + count) as class indices into `labels`.
  void read_label_rows(std::int64_t row, std::int64_t count, std::int32_t* labels) const;

  std::shared_ptr<const MappedSource> source_;
  const MappedSplit& split_;
  detail::Hdf5Handle file_, images_, label_file_, labels_;
};

}  // namespace phalanx::data
