// Checked chunk decoding. HDF5 1.10 decodes a filtered chunk by running the dataset's filters in
// reverse, then copies a whole chunk's bytes out of whatever they returned without comparing the
// two sizes (H5D__chunk_lock): a gzip chunk that inflates to 5 bytes where a chunk holds 81 made
// H5Dread copy 76 bytes from past the end of HDF5's buffer, heap contents into the samples or a
// crash (docs/HARDENING.md). So what the compressor decodes a chunk to is checked against what a
// chunk of the dataset being read holds:
// - gzip: HDF5 keeps its own predefined filters (H5Zregister refuses ids below 256), so the
//   checked file driver inflates each chunk's stored bytes as it reads them for HDF5 and refuses
//   a chunk that decodes to another size (gzip_chunk_problem); the read fails, naming the chunk;
// - LZF: the plugin's filter is registered behind a wrapper that compares what it returns
//   (lzf_filter.cpp) and fails the chunk, HDF5 then failing the read.
// What a chunk holds travels with the read: read_checked() states it for the calling thread
// around H5Dread. The storage check (dataset_storage_check.hpp) admits only pipelines whose
// decoded size this vouches for: shuffle, then gzip or LZF, then Fletcher-32, each optional (the
// order h5py and phalanx's writer use); the stored size of each chunk its compressor skipped is
// checked there. Reads through HDF5's MPI-IO driver do not pass the checked driver: their gzip
// chunks are not checked.
// Internal to phalanx (the data module and the checkpoint reader); callers hold the HDF5 lock
// (hdf5_lock.hpp).
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace phalanx::data::detail {

// A dataset's filter pipeline as the checks see it.
struct FilterPipeline {
  std::string problem;                  // why phalanx will not read chunks through it; empty when it will
  int compressor = -1;                  // position of gzip or LZF; -1 without one
  H5Z_filter_t compressor_filter = -1;  // H5Z_FILTER_DEFLATE or lzf_filter_id; -1 without one
  int checksum = -1;                    // position of Fletcher-32; -1 without one
};

// The pipeline of the dataset creation property list `creation`, checked against the rule above,
// with phalanx's decoders registered for the filters it uses.
FilterPipeline filter_pipeline(hid_t creation);

// The bytes one value of `dataset`'s datatype takes in its file (a chunk holds this times its
// values): the datatype's size, except that a variable-length value (a string or a sequence) is
// stored as a global heap reference of 4 + address size + 4 bytes, where H5Dget_type reports the
// size it has in memory. 0 for datatypes holding variable-length values or references inside a
// compound or an array, which phalanx never reads.
std::uint64_t stored_value_bytes(hid_t dataset);

// H5Dread, with every chunk the read decodes through gzip or LZF required to decode to exactly
// the bytes a chunk of `dataset` holds. A filter that fails on a chunk is noted for
// read_failure_reason() through a filter callback, set on `transfer` unless it is H5P_DEFAULT.
herr_t read_checked(hid_t dataset, hid_t memory_type, hid_t memory_space, hid_t file_space, hid_t transfer,
                    void* buffer);

// Why the read_checked() this thread made last failed, for its message: the filter that refused a
// chunk ("the chunk fails its Fletcher-32 checksum", or the filter's own words), else HDF5's
// innermost reason (the checked file driver's for a damaged gzip chunk), else "file truncated or
// corrupt". Call it right after the failed read: the next HDF5 call clears the error stack.
std::string read_failure_reason();

// What a chunk of the dataset this thread reads through read_checked() holds, for its decoders: 0
// outside read_checked() and for datasets without a compressor.
struct ChunkExpectation {
  std::size_t bytes = 0;
  bool gzip = false;  // the compressor is gzip (checked by the driver), not LZF (by its wrapper)
};
const ChunkExpectation& chunk_expectation();

// For the checked file driver: why the stored bytes of a gzip chunk (read from the file for HDF5)
// cannot decode to `expected` bytes ("it inflates to 5 bytes, a chunk of the dataset holds 81"), or
// empty. Bytes that are not a whole zlib stream are HDF5's to refuse: it fails to inflate them.
std::string gzip_chunk_problem(const std::uint8_t* stored, std::size_t bytes, std::size_t expected);

// For the decoders: whether `decoded` bytes is what a chunk holds; when not, puts the reason on
// HDF5's error stack ("gzip: the chunk decodes to 5 bytes, a chunk of the dataset holds 81"), where the
// reader's message takes it from. Never throws (HDF5 calls filters from C).
bool decoded_chunk_fits(const char* filter, std::size_t decoded) noexcept;

// For the decoders: puts `reason` on HDF5's error stack as the filter `filter`'s. Never throws.
void push_filter_error(const char* filter, const char* reason) noexcept;

}  // namespace phalanx::data::detail
