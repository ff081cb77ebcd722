// The HDF5 dataset of DESIGN §4: reading with full validation, writing atomically.
// All HDF5 calls happen on the calling thread (Debian's HDF5 is not thread-safe).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace phalanx::data {

// Schema identity written to the root attributes (DESIGN §4).
inline constexpr const char* dataset_format = "phalanx-dataset";
inline constexpr int dataset_version = 1;

// One split held in memory: uint8 images NHWC and int32 labels.
struct Split {
  std::string name;
  std::int64_t count = 0;
  int height = 0, width = 0, channels = 0;
  std::vector<std::uint8_t> images;
  std::vector<std::int32_t> labels;

  std::int64_t image_bytes() const { return static_cast<std::int64_t>(height) * width * channels; }
};

struct DatasetInfo {
  std::string path;
  int version = 0;
  std::vector<std::string> classes;
  std::vector<float> mean;                // per channel, of the training images in [0,1]
  std::vector<float> standard_deviation;  // per channel
  struct SplitInfo {
    std::string name;
    std::int64_t count = 0;
    int height = 0, width = 0, channels = 0;
  };
  std::vector<SplitInfo> splits;  // in file order: train, test, val when present

  const SplitInfo* find_split(const std::string& name) const;
};

// Opens and validates the file's schema (format, version, classes, mean/std, every split's
// dtypes, ranks, matching counts). Throws InvalidInput naming the file and dataset.
DatasetInfo read_dataset_info(const std::string& path);

// Reads one split fully into memory and validates its labels against the class count.
Split read_split(const std::string& path, const std::string& split_name);

// Reads only one split's labels (validated like read_split), e.g. for a label histogram.
std::vector<std::int32_t> read_labels(const std::string& path, const std::string& split_name);

struct WriteOptions {
  std::int64_t chunk_samples = 1024;  // chunk size along N
  int gzip_level = 0;                 // 0: no compression
};

// Writes a dataset file: mean and std are computed from the train split. Written to a
// temporary name and renamed, so a failed import never leaves a half file under `path`.
void write_dataset(const std::string& path, const std::vector<std::string>& classes,
                   const std::vector<const Split*>& splits, const WriteOptions& options = {});

// Per-channel mean and standard deviation of images in [0,1] units.
void channel_statistics(const Split& split, std::vector<float>& mean, std::vector<float>& standard_deviation);

}  // namespace phalanx::data
