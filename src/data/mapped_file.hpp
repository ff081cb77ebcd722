// Opening a user's HDF5 files for data.source and the tree listing of `data inspect`: read-only,
// without requiring file locks, with messages that name the file, the dataset and the config key.
// Private to the data module.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/config/config.hpp"
#include "phalanx/data/hdf5_handle.hpp"

namespace phalanx::data::mapped {

// "FILE:DATASET (KEY): message" as an input error (exit status 2).
[[noreturn]] void fail(const config::DatasetLocation& location, const std::string& key,
                       const std::string& message);

// Opens `path` read-only. HDF5 1.10.7+ locks files even for reading and fails where the file
// system refuses locks (many parallel file systems): the open asks for a lock but goes on without
// one where locking is unsupported, as HDF5_USE_FILE_LOCKING=FALSE would. `key` names the config
// key (empty for the command line) for messages.
detail::Hdf5Handle open_file(const std::string& path, const std::string& key);

// Opens a dataset of an open file; `cache_bytes` > 0 sizes its chunk cache (HDF5's default of
// 1 MiB per dataset re-reads and re-decompresses chunks a batch touches more than once).
detail::Hdf5Handle open_dataset(hid_t file, const config::DatasetLocation& location, const std::string& key,
                                std::int64_t cache_bytes = 0);

std::vector<std::uint64_t> dimensions(hid_t dataset);

// How many chunks one sample (a slice along the first axis) spans; 1 unless chunked. open_dataset
// refuses more than maximum_chunks_per_sample: HDF5 looks each chunk of a read up and keeps a
// record of it while it reads, about 5 us and 14 KB a chunk (a sample over 32,769 chunks took
// 0.16 s and 490 MB to read; over 4,097, 12 ms and 78 MB). Files h5py chunks itself have tens
// to hundreds of chunks per sample.
std::uint64_t chunks_per_sample(hid_t dataset);
inline constexpr std::uint64_t maximum_chunks_per_sample = 4096;

// How a dataset is stored: chunk shape (empty when contiguous or compact) and its filters.
struct Storage {
  std::vector<std::uint64_t> chunk;
  std::string compression;  // "gzip 4", "lzf", "shuffle+gzip 4"...; empty when none
};
Storage storage(hid_t dataset);

// Rows [first, first + rows) of a label dataset of `dimensions` into `values` as doubles, row
// after row, read in a memory space of the rows' own shape (into a flat one, HDF5 read a one-hot
// file 8x slower). False where HDF5 cannot read them (detail::read_failure_reason says why).
bool read_label_rows(hid_t dataset, const std::vector<std::uint64_t>& dimensions, std::int64_t first,
                     std::int64_t rows, std::vector<double>& values);

// The class a one-hot row of `width` values names: the column of its one 1 where the rest are 0;
// -1 for any other row.
std::int64_t one_hot_class(const double* row, std::int64_t width);

// The names of every dataset in the file `path`, for "no dataset /x (the file has: ...)"
// messages; each group's header is checked before HDF5 lists its links.
std::vector<std::string> dataset_names(hid_t file, const std::string& path);

// A 1-D dataset of strings (fixed or variable length, as h5py writes bytes or str).
std::vector<std::string> read_strings(hid_t dataset, const config::DatasetLocation& location,
                                      const std::string& key);

}  // namespace phalanx::data::mapped
