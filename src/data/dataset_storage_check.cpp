// The storage check (dataset_storage_check.hpp says why it exists). What HDF5 1.10.8 does with
// each layout when H5Dread copies values out (docs/HARDENING.md has the two damaged files):
// - compact: the values live in the layout message; HDF5 allocates the message's stated data size
//   when it opens the dataset and copies the extent's bytes from that buffer (H5D__compact_readvv);
// - chunked: for a chunk it finds in the index, HDF5 allocates the size the chunk's index record
//   states and reads that much, runs the filters the record does not skip, and copies a whole
//   chunk's worth of values from the result (H5D__chunk_lock); without filters nothing makes up a
//   record that states too few bytes;
// - contiguous: HDF5 reads from the file at the stored address, into the caller's buffer or a
//   buffer of its own sized to fit; storage smaller than the values reads bytes past the dataset
//   (not past memory), refused here as the same damage.
#include "phalanx/data/dataset_storage_check.hpp"

#include <limits>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/data/hdf5_handle.hpp"

namespace phalanx::data::detail {
namespace {

std::string count_of(std::uint64_t count, const char* singular, const char* plural) {
  return std::to_string(count) + " " + (count == 1 ? singular : plural);
}

std::string coordinates_text(const std::vector<hsize_t>& values) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "," + std::to_string(...).
  std::string text = "[";
  for (std::size_t axis = 0; axis < values.size(); ++axis) {
    if (axis) text += ',';
    text += std::to_string(values[axis]);
  }
  text += ']';
  return text;
}

// "its storage holds 1 byte, its 1 value of 8 bytes needs 8"
std::string storage_shortfall(std::uint64_t stored, std::uint64_t values, std::uint64_t value_bytes,
                              std::uint64_t needed) {
  return "its storage holds " + count_of(stored, "byte", "bytes") + ", its " +
         count_of(values, "value", "values") + " of " + count_of(value_bytes, "byte", "bytes") +
         (values == 1 ? " needs " : " need ") + std::to_string(needed);
}

// Every record of the chunk index: an unfiltered chunk must be stored in exactly a chunk's bytes.
// All records, not the one a lookup of each chunk's coordinates returns: HDF5's own lookup
// (a binary search over the records' keys) and H5Dget_chunk_info_by_coord (the first record in
// index order) can return different records of a damaged index for the same chunk.
std::string chunk_records_problem(hid_t dataset, hid_t space, int rank, const std::vector<hsize_t>& chunk,
                                  std::uint64_t value_bytes, int filters) {
  if (filters < 0) return "its filters cannot be read";
  hsize_t records = 0;
  if (H5Dget_num_chunks(dataset, space, &records) < 0) return "its chunk index cannot be read";
  if (records > largest_checked_chunk_count) return {};
  std::uint64_t chunk_bytes = value_bytes;
  for (const hsize_t extent : chunk) chunk_bytes *= extent;  // below 4 GiB: HDF5 refuses larger chunks
  // A record's filter mask has bit i set when filter i was skipped for that chunk.
  const unsigned every_filter = filters >= 32 ? ~0u : (1u << filters) - 1u;
  std::vector<hsize_t> offset(static_cast<std::size_t>(rank));
  for (hsize_t record = 0; record < records; ++record) {
    unsigned skipped = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t stored = 0;
    if (H5Dget_chunk_info(dataset, space, record, offset.data(), &skipped, &address, &stored) < 0)
      return "its chunk index cannot be read (record " + std::to_string(record) + ")";
    const bool unfiltered = filters == 0 || (skipped & every_filter) == every_filter;
    if (address == HADDR_UNDEF || !unfiltered || stored == chunk_bytes) continue;
    return "its chunk at " + coordinates_text(offset) + " is stored in " + count_of(stored, "byte", "bytes") +
           ", but an unfiltered chunk of " + coordinates_text(chunk) + " values of " +
           count_of(value_bytes, "byte", "bytes") + " takes " + std::to_string(chunk_bytes);
  }
  return {};
}

}  // namespace

std::string dataset_storage_problem(hid_t dataset) {
  // Each query may fail on a damaged header; the failures are answers here, not reports to print.
  silence_hdf5_error_printing();
  std::string problem;
  const Hdf5Handle space = dataspace_handle(H5Dget_space(dataset));
  const Hdf5Handle type = datatype_handle(H5Dget_type(dataset));
  const Hdf5Handle creation = property_list_handle(H5Dget_create_plist(dataset));
  const hssize_t points = space.valid() ? H5Sget_simple_extent_npoints(space.get()) : -1;
  const std::uint64_t value_bytes = type.valid() ? H5Tget_size(type.get()) : 0;
  const auto values = static_cast<std::uint64_t>(points);
  if (!creation.valid() || points < 0 || value_bytes == 0) {
    problem = "its dataspace, datatype or storage layout cannot be read";
  } else if (values > std::numeric_limits<std::uint64_t>::max() / value_bytes) {
    problem = "its " + count_of(values, "value", "values") + " of " + count_of(value_bytes, "byte", "bytes") +
              " overflow 64 bits";
  } else {
    const std::uint64_t needed = values * value_bytes;
    switch (H5Pget_layout(creation.get())) {
      case H5D_COMPACT: {
        const std::uint64_t stored = H5Dget_storage_size(dataset);
        if (stored != needed) problem = storage_shortfall(stored, values, value_bytes, needed);
        break;
      }
      case H5D_CONTIGUOUS: {
        // Not yet written (no address; reads give the fill value) or in external files: nothing
        // of HDF5's is sized from the stored size.
        if (H5Dget_offset(dataset) == HADDR_UNDEF) break;
        const std::uint64_t stored = H5Dget_storage_size(dataset);
        if (stored < needed) problem = storage_shortfall(stored, values, value_bytes, needed);
        break;
      }
      case H5D_CHUNKED: {
        const int rank = H5Sget_simple_extent_ndims(space.get());
        std::vector<hsize_t> chunk(H5S_MAX_RANK, 0);
        const int chunk_rank = H5Pget_chunk(creation.get(), H5S_MAX_RANK, chunk.data());
        if (chunk_rank != rank) {
          problem = "its chunks have " + std::to_string(chunk_rank) + " dimensions, the dataset " +
                    std::to_string(rank);
          break;
        }
        chunk.resize(static_cast<std::size_t>(rank));
        problem = chunk_records_problem(dataset, space.get(), rank, chunk, value_bytes,
                                        H5Pget_nfilters(creation.get()));
        break;
      }
      default: break;  // virtual datasets store nothing of their own
    }
  }
  return problem;
}

void require_sound_dataset_storage(hid_t dataset, const std::string& place) {
  const std::string problem = dataset_storage_problem(dataset);
  if (!problem.empty()) throw_input_error(place + ": " + problem + " (file corrupt?)");
}

}  // namespace phalanx::data::detail
