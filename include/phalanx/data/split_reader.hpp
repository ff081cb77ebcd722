// SplitReader: one split of a dataset file held open for reading ranges of samples, for the
// readers that never hold the whole split in one process (the node cache fills its share of a
// shared copy; the streaming source reads chunk by chunk). The file is opened read-only and
// validated like read_split; every call holds the process-wide HDF5 lock, so it may be used from
// the loader thread. Given an MpiIoAccess (a parallel-HDF5 build), the file is opened with MPI-IO
// on its ranks and every read is collective: all of them call read() together.
#pragma once

#include <cstdint>
#include <string>

#include "phalanx/comm/mpi_io.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "phalanx/data/split_range_reader.hpp"

namespace phalanx::data {

class SplitReader final : public SplitRangeReader {
 public:
  SplitReader(const std::string& path, const std::string& split_name,
              const comm::MpiIoAccess* mpi_io = nullptr);
  ~SplitReader() override;

  const std::string& path() const { return path_; }
  const DatasetInfo& info() const { return info_; }
  const DatasetInfo::SplitInfo& split() const override { return split_; }
  // Samples per HDF5 chunk of the images (along N); for a contiguous dataset, the samples of
  // contiguous_read_bytes.
  std::int64_t chunk_samples() const override { return chunk_samples_; }

  // Reads samples [begin, end) into `images` (NHWC uint8) and `labels`, and checks every label
  // against the class count. Input errors name the file, the dataset and the sample.
  void read(std::int64_t begin, std::int64_t end, std::uint8_t* images, std::int32_t* labels) const override;
  void check_labels(std::int64_t begin, std::int64_t end) const override;

 private:
  // Throws naming the first of `count` labels, those of samples from `begin` on, outside the classes.
  void require_known_labels(const std::int32_t* labels, std::int64_t begin, std::int64_t count) const;
  // After a failed read of samples [begin, end) of `dataset`: throws, naming the samples and why.
  // Throws when the open file is smaller than when it was opened (see read()).
  void fail_if_shrank(const std::string& what) const;
  [[noreturn]] void fail_read(hid_t dataset, hid_t memory_type, const std::string& name, std::int64_t begin,
                              std::int64_t end) const;

  std::string path_;
  DatasetInfo info_;
  DatasetInfo::SplitInfo split_;
  std::int64_t chunk_samples_ = 0;
  std::int64_t opened_bytes_ = -1;  // the file's size when it was opened (-1: unknown)
  const comm::MpiIoAccess* mpi_io_ = nullptr;
  std::string images_name_, labels_name_;
  detail::Hdf5Handle file_, images_, labels_;
};

}  // namespace phalanx::data
