// Checked chunk decoding (checked_chunk_decoding.hpp says why it exists): the pipeline rule, the
// bytes a chunk holds, and the read that states them for the decoders.
#include "phalanx/data/checked_chunk_decoding.hpp"

#include <string>
#include <vector>

#include "phalanx/data/dataset.hpp"
#include "phalanx/data/hdf5_handle.hpp"

namespace phalanx::data::detail {

// lzf_filter.cpp: registers the LZF plugin behind phalanx's wrapper; empty, or why it could not.
std::string register_lzf_filter();

namespace {

// What the chunks of the dataset this thread reads hold; empty when no read_checked() is under way.
thread_local ChunkExpectation current_expectation;

// Why a filter refused a chunk in the read_checked() this thread made last: the filter's own words
// (push_filter_error), else which filter failed (note_filter_failure); empty when none failed.
// HDF5 1.14.5 and later pause the error stack while a filter runs, so what a filter pushes there
// never reaches the reader's message: it is kept here, the same way on every version.
thread_local std::string filter_refusal;

std::string filter_name(H5Z_filter_t filter) {
  switch (filter) {
    case H5Z_FILTER_DEFLATE: return "gzip";
    case H5Z_FILTER_SHUFFLE: return "shuffle";
    case H5Z_FILTER_FLETCHER32: return "Fletcher-32";
    case H5Z_FILTER_SZIP: return "szip";
    case H5Z_FILTER_NBIT: return "nbit";
    case H5Z_FILTER_SCALEOFFSET: return "scale-offset";
    case lzf_filter_id: return "LZF";
    default: return "filter " + std::to_string(filter);
  }
}

// HDF5 calls this (the transfer list's filter callback) when a filter fails on a chunk.
H5Z_cb_return_t note_filter_failure(H5Z_filter_t filter, void*, std::size_t, void*) noexcept {
  try {
    if (filter_refusal.empty())
      filter_refusal = filter == H5Z_FILTER_FLETCHER32 ? "the chunk fails its Fletcher-32 checksum"
                                                       : filter_name(filter) + " cannot decode the chunk";
  } catch (...) {  // std::bad_alloc: the read fails all the same
  }
  return H5Z_CB_FAIL;  // the read fails, as it does without a callback
}

// The transfer list that reads with note_filter_failure: `transfer` itself (phalanx's own lists,
// such as the collective MPI-IO one), or for H5P_DEFAULT one made once for the process. Set before
// the read: an HDF5 call after a failed read would clear the error stack its reason is taken from.
hid_t noting_filter_failures(hid_t transfer) {
  if (transfer != H5P_DEFAULT) {
    H5Pset_filter_callback(transfer, note_filter_failure, nullptr);
    return transfer;
  }
  // Closed when the process exits, before HDF5's own exit handler closes the library.
  static const Hdf5Handle default_transfer = [] {
    Hdf5Handle list = property_list_handle(H5Pcreate(H5P_DATASET_XFER));
    if (list.valid() && H5Pset_filter_callback(list.get(), note_filter_failure, nullptr) < 0) list.close();
    return list;
  }();
  return default_transfer.valid() ? default_transfer.get() : H5P_DEFAULT;
}

}  // namespace

FilterPipeline filter_pipeline(hid_t creation) {
  FilterPipeline pipeline;
  const int count = H5Pget_nfilters(creation);
  if (count < 0) {
    pipeline.problem = "its filters cannot be read";
    return pipeline;
  }
  std::string names;
  bool in_order = true;
  int shuffle = -1;
  for (int index = 0; index < count; ++index) {
    unsigned flags = 0, configuration = 0;
    std::size_t value_count = 0;
    const H5Z_filter_t filter = H5Pget_filter2(creation, static_cast<unsigned>(index), &flags, &value_count,
                                               nullptr, 0, nullptr, &configuration);
    if (filter < 0) {
      pipeline.problem = "its filter " + std::to_string(index) + " cannot be read";
      return pipeline;
    }
    names += (names.empty() ? "" : ", ") + filter_name(filter);
    // Shuffle keeps a chunk's size, so the compressor's output is the decoded chunk; a filter
    // before the compressor that changes the size (or one phalanx cannot see into) would leave
    // the decoded size unchecked.
    switch (filter) {
      case H5Z_FILTER_SHUFFLE:
        in_order &= shuffle < 0 && pipeline.compressor < 0 && pipeline.checksum < 0;
        shuffle = index;
        break;
      case H5Z_FILTER_DEFLATE:
      case lzf_filter_id:
        in_order &= pipeline.compressor < 0 && pipeline.checksum < 0;
        pipeline.compressor = index;
        pipeline.compressor_filter = filter;
        break;
      case H5Z_FILTER_FLETCHER32:
        in_order &= pipeline.checksum < 0;
        pipeline.checksum = index;
        break;
      default:
        pipeline.problem = "its chunks go through " + filter_name(filter) +
                           ", which phalanx does not read (it reads chunks filtered with shuffle, gzip, LZF "
                           "and Fletcher-32; `h5repack -f GZIP=4` rewrites a file with gzip)";
        return pipeline;
    }
  }
  if (!in_order) {
    pipeline.problem = "its filters (" + names +
                       ") are not in an order phalanx reads: shuffle, then gzip or LZF, then Fletcher-32, "
                       "each at most once";
    return pipeline;
  }
  if (pipeline.compressor_filter == lzf_filter_id)
    if (const std::string problem = register_lzf_filter(); !problem.empty())
      pipeline.problem = "its chunks are LZF-compressed, but HDF5 has no usable LZF filter plugin (" +
                         problem + "); install a working one or point HDF5_PLUGIN_PATH at it";
  return pipeline;
}

std::uint64_t stored_value_bytes(hid_t dataset) {
  const Hdf5Handle type = datatype_handle(H5Dget_type(dataset));
  if (!type.valid()) return 0;
  const H5T_class_t type_class = H5Tget_class(type.get());
  const bool variable =
      type_class == H5T_VLEN || (type_class == H5T_STRING && H5Tis_variable_str(type.get()) > 0);
  if (variable || (type_class == H5T_REFERENCE && H5Tequal(type.get(), H5T_STD_REF_OBJ) > 0)) {
    const Hdf5Handle file = file_handle(H5Iget_file_id(dataset));
    const Hdf5Handle creation = property_list_handle(file.valid() ? H5Fget_create_plist(file.get()) : -1);
    std::size_t address_bytes = 0, length_bytes = 0;
    if (!creation.valid() || H5Pget_sizes(creation.get(), &address_bytes, &length_bytes) < 0) return 0;
    // A heap reference: the sequence's length, the collection's address, the object's index.
    return variable ? 4 + address_bytes + 4 : address_bytes;
  }
  if (type_class == H5T_REFERENCE) return 0;  // region references: stored unlike in memory
  if ((type_class == H5T_COMPOUND || type_class == H5T_ARRAY) &&
      (H5Tdetect_class(type.get(), H5T_VLEN) != 0 || H5Tdetect_class(type.get(), H5T_REFERENCE) != 0))
    return 0;
  return H5Tget_size(type.get());
}

namespace {

// What a chunk of `dataset` decodes to, when its compressor's output is to be checked.
ChunkExpectation expectation_of(hid_t dataset) {
  ChunkExpectation expectation;
  const Hdf5Handle creation = property_list_handle(H5Dget_create_plist(dataset));
  if (!creation.valid() || H5Pget_layout(creation.get()) != H5D_CHUNKED ||
      H5Pget_nfilters(creation.get()) <= 0)
    return expectation;
  const FilterPipeline pipeline = filter_pipeline(creation.get());
  std::vector<hsize_t> chunk(H5S_MAX_RANK, 0);
  const int rank = H5Pget_chunk(creation.get(), H5S_MAX_RANK, chunk.data());
  if (!pipeline.problem.empty() || pipeline.compressor < 0 || rank <= 0) return expectation;
  std::uint64_t chunk_bytes = stored_value_bytes(dataset);
  // Below 4 GiB: the object-header check refuses larger chunks before the dataset opens.
  for (int axis = 0; axis < rank; ++axis) chunk_bytes *= chunk[static_cast<std::size_t>(axis)];
  expectation.bytes = static_cast<std::size_t>(chunk_bytes);
  expectation.gzip = pipeline.compressor_filter == H5Z_FILTER_DEFLATE;
  return expectation;
}

}  // namespace

herr_t read_checked(hid_t dataset, hid_t memory_type, hid_t memory_space, hid_t file_space, hid_t transfer,
                    void* buffer) {
  // Worked out before the read, its handles closed: closing one after a failed read would clear
  // the error stack the caller takes the reason from.
  const ChunkExpectation expectation = expectation_of(dataset);
  const hid_t noting_transfer = noting_filter_failures(transfer);
  const ChunkExpectation outer = current_expectation;
  current_expectation = expectation;
  filter_refusal.clear();
  const herr_t status = H5Dread(dataset, memory_type, memory_space, file_space, noting_transfer, buffer);
  current_expectation = outer;
  return status;
}

std::string read_failure_reason() {
  return filter_refusal.empty() ? hdf5_failure_reason() : filter_refusal;
}

const ChunkExpectation& chunk_expectation() {
  return current_expectation;
}

void push_filter_error(const char* filter, const char* reason) noexcept {
  H5Epush2(H5E_DEFAULT, __FILE__, filter, __LINE__, H5E_ERR_CLS, H5E_PLINE, H5E_CANTFILTER, "%s", reason);
  try {
    if (filter_refusal.empty()) filter_refusal = reason;
  } catch (...) {  // std::bad_alloc: note_filter_failure names the filter instead
  }
}

bool decoded_chunk_fits(const char* filter, std::size_t decoded) noexcept {
  const std::size_t expected = current_expectation.bytes;
  if (expected == 0 || decoded == expected) return true;
  try {
    const std::string reason = std::string(filter) + ": the chunk decodes to " + std::to_string(decoded) +
                               " bytes, a chunk of the dataset holds " + std::to_string(expected);
    push_filter_error(filter, reason.c_str());
  } catch (...) {
    push_filter_error(filter, "the chunk decodes to the wrong size");
  }
  return false;
}

}  // namespace phalanx::data::detail
