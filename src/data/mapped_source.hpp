// MappedSource: a user's own HDF5 files described by data.source (docs/DATA.md), opened in place
// and validated whole before anything trains: every file and dataset exists, image and label
// counts match, the layout and label encoding are known, every label is in range (one-hot rows
// are one-hot), float images lie in [0, 1] or [0, 255] on a sample. Labels are checked in one
// pass of blocks and, like the images, stay in the files: MappedSplitReader reads both, so a
// split's memory does not grow with its samples (a carved split keeps each sample's stored row
// and class: 12 bytes a sample).
// Every error is an input error naming the file, the dataset and the config key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/config/config.hpp"
#include "phalanx/data/dataset.hpp"
#include "source_layout.hpp"

namespace phalanx::data {

// How stored pixel values become the uint8 values the pipeline uses.
enum class PixelScale {
  Bytes,      // uint8, taken as stored
  Unit,       // float in [0, 1]: x 255, rounded
  ByteRange,  // float in [0, 255]: rounded
};

// One split of a mapped source, with everything a reader needs to serve it.
struct MappedSplit {
  DatasetInfo::SplitInfo info;     // name, count and NHWC sample shape as the pipeline sees it
  config::DatasetLocation images;  // where its images are
  std::string images_key;          // the config key naming them, for messages
  ImageLayout layout = ImageLayout::Nhwc;
  std::vector<std::uint64_t> image_dimensions;  // the stored shape
  PixelScale scale = PixelScale::Bytes;
  std::string scale_evidence;         // how the scale was decided, for the log
  std::vector<std::int64_t> rows;     // stored row of each sample when carved; empty: row = sample
  // A carved split's class of each sample (carving reads them all); empty: read from the file.
  std::vector<std::int32_t> labels;
  config::DatasetLocation labels_location;  // where its labels are, checked whole at opening
  std::string labels_key;
  LabelEncoding label_encoding = LabelEncoding::Index;
  std::vector<std::uint64_t> label_dimensions;  // the stored shape
  std::int64_t label_chunk_bytes = 0;           // stored bytes of one label chunk (contiguous: 0)
  std::int64_t chunk_rows = 0;        // images stored per HDF5 chunk along N (contiguous: 0)
  std::int64_t chunk_band_bytes = 0;  // stored bytes HDF5 reads to get chunk_rows whole samples

  std::int64_t stored_row(std::int64_t sample) const { return rows.empty() ? sample : rows[sample]; }
};

// Label values read at a time (as double, 8 MiB): opening a source checks its labels in blocks of
// this many, and a reader reads a batch's labels in blocks of it, so a one-hot file of ImageNet's
// 1.28 million rows of 1000 values is never held whole (10 GB).
inline constexpr std::int64_t label_block_values = std::int64_t{1} << 20;

// A file's path, size and modification time in one string: what tells a replaced file from the
// one a source was validated (or its statistics computed) against.
std::string file_identity(const std::string& path);

class MappedSource {
 public:
  // Opens and validates `source`; carves val/test from train when fractions are set.
  explicit MappedSource(const config::SourceConfig& source);

  // Classes and the splits' shapes and counts (mean and std are not part of the files: see
  // source_statistics.hpp).
  const DatasetInfo& info() const { return info_; }
  // The split named `name` (train, test or val); an input error when the source has none.
  const MappedSplit& split(const std::string& name) const;
  // One line for the log: layouts, dtypes, scales, carving.
  const std::string& description() const { return description_; }
  // Chunkings that make reads far larger than a batch needs, one line each.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Identifies the files and mapping, for the statistics sidecar: a changed file or mapping
  // invalidates cached statistics.
  const std::string& fingerprint() const { return fingerprint_; }

 private:
  DatasetInfo info_;
  std::vector<MappedSplit> splits_;
  std::string description_, fingerprint_;
  std::vector<std::string> warnings_;
};

}  // namespace phalanx::data
