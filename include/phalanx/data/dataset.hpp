// The HDF5 dataset of docs/DESIGN.md §4: reading with full validation, writing atomically.
// All HDF5 calls happen on the calling thread (Debian's HDF5 is not thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace phalanx::data {

// Schema identity written to the root attributes (docs/DESIGN.md §4).
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
  bool lzf = false;                   // LZF (the h5py filter, id 32000) instead; needs its HDF5 plugin
};

// HDF5 filter id of LZF, as registered by h5py and Debian's hdf5-plugin-lzf.
inline constexpr int lzf_filter_id = 32000;

// Writes a dataset file: mean and std are computed from the train split. Written to a
// temporary name and renamed, so a failed import never leaves a half file under `path`.
void write_dataset(const std::string& path, const std::vector<std::string>& classes,
                   const std::vector<const Split*>& splits, const WriteOptions& options = {});

// A split that arrives a slab at a time, for imports larger than memory (ImageNet at 224x224 is
// about 190 GB): `fill(first, count, images, labels)` puts samples [first, first + count) in the
// buffers (NHWC uint8, int32). The writer calls it in order, in slabs of whole HDF5 chunks, and
// holds one slab (two with `fill_beside_writes`) plus 4 bytes per label at a time. An exception
// from `fill` ends the write and leaves nothing under the output path.
struct SplitStream {
  std::string name;
  std::int64_t count = 0;
  int height = 0, width = 0, channels = 0;
  std::function<void(std::int64_t first, std::int64_t count, std::uint8_t* images, std::int32_t* labels)>
      fill;
  // A `fill` that never calls HDF5 (an image decoder) may run on another thread, filling the next
  // slab while the writer hashes and writes this one: two slabs held, the write's time hidden.
  bool fill_beside_writes = false;

  std::int64_t image_bytes() const { return static_cast<std::int64_t>(height) * width * channels; }
};

// write_dataset for splits that arrive in slabs: the same file, checksums and statistics as
// writing the whole splits from memory.
void write_dataset_in_slabs(const std::string& path, const std::vector<std::string>& classes,
                            const std::vector<SplitStream>& splits, const WriteOptions& options = {});

// Per-channel mean and standard deviation of images in [0,1] units.
void channel_statistics(const Split& split, std::vector<float>& mean, std::vector<float>& standard_deviation);

// Integrity. Each /<split>/images and /<split>/labels dataset carries a string attribute
// "checksum" = "xxh64:<16 lowercase hex digits>": XXH64 (seed 0, the public xxHash 64-bit
// definition) of the dataset's values as little-endian bytes in C order (images: the uint8 NHWC
// bytes; labels: each int32 as 4 little-endian bytes). It covers values, not the stored layout, so
// rechunking or recompressing the file keeps it valid.
inline constexpr const char* checksum_attribute = "checksum";
inline constexpr const char* checksum_algorithm = "xxh64";

// XXH64 of `size` bytes with `seed`; identical to the reference xxHash implementation.
std::uint64_t xxhash64(const void* bytes, std::size_t size, std::uint64_t seed = 0);

// Incremental XXH64: feeding the same bytes in any pieces gives xxhash64 of their concatenation,
// so a large dataset can be hashed while it is read in slabs.
class Xxhash64Stream {
 public:
  explicit Xxhash64Stream(std::uint64_t seed = 0);
  void update(const void* bytes, std::size_t size);
  std::uint64_t digest() const;

 private:
  std::uint64_t accumulators_[4];
  std::uint64_t seed_;
  std::uint64_t total_bytes_ = 0;
  unsigned char buffer_[32];
  std::size_t buffered_ = 0;
};

// "xxh64:<16 hex digits>" of a finished hash.
std::string format_checksum(std::uint64_t hash);
// "xxh64:<hex>" of bytes, as stored in the "checksum" attribute.
std::string checksum_text(const void* bytes, std::size_t size);
// The same for int32 labels: hashes their little-endian bytes whatever the host byte order.
std::string checksum_text(const std::vector<std::int32_t>& labels);

// Recomputes every split's images and labels checksums (reading in chunk-aligned slabs) and
// compares them with the stored ones. Returns a one-line summary on success; throws InvalidInput
// naming the file and the first dataset whose bytes changed, or saying the file has no checksums.
std::string verify_checksums(const std::string& path);

// Reads only the samples `indices` of one split (validated like read_split), in that order: for
// previews and spot checks of files too large to read whole.
Split read_samples(const std::string& path, const std::string& split_name,
                   const std::vector<std::int64_t>& indices);

}  // namespace phalanx::data
