// The storage check (dataset_storage_check.hpp says why it exists). What HDF5 1.10.8 does with
// each layout when H5Dread copies values out (docs/HARDENING.md has the two damaged files):
// - compact: the values live in the layout message; HDF5 allocates the message's stated data size
//   when it opens the dataset and copies the extent's bytes from that buffer (H5D__compact_readvv;
//   HDF5 1.10.11, 1.12.3 and 1.14.1 refuse such a dataset at open themselves);
// - chunked: for a chunk it finds in the index, HDF5 allocates the size the chunk's index record
//   states and reads that much, runs the filters the record does not skip, and copies a whole
//   chunk's worth of values from the result (H5D__chunk_lock); without filters nothing makes up a
//   record that states too few bytes;
// - contiguous: HDF5 reads from the file at the stored address, into the caller's buffer or a
//   buffer of its own sized to fit; storage smaller than the values reads bytes past the dataset
//   (not past memory), refused here as the same damage.
#include "phalanx/data/dataset_storage_check.hpp"

#include <limits>
#include <optional>
#include <set>
#include <vector>

#include "hdf5_header_reading.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/checked_chunk_decoding.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "phalanx/data/hdf5_objects.hpp"

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

// What each record of a chunk index must state about its chunk's stored size, given which of
// the pipeline's filters it applied (a record's filter mask has bit i set when filter i was
// skipped for that chunk). Only the compressor changes a chunk's size by an amount the record
// cannot tell (its decoder checks what it decodes to: checked_chunk_decoding.hpp); shuffle keeps
// it, and Fletcher-32 adds its 4-byte checksum, which HDF5 reads from the last 4 bytes stored
// (a chunk stored in fewer made HDF5 1.10 read far before its buffer, a crash).
struct RecordRule {
  std::vector<hsize_t> chunk;  // a chunk's extent
  std::uint64_t value_bytes = 0;
  std::uint64_t chunk_bytes = 0;
  int compressor = -1;  // pipeline positions; -1 without
  int checksum = -1;

  // "its chunk at [0,3] is stored in 1 byte, but an unfiltered chunk of [1,2] values of 1 byte
  // takes 2"; empty when the record's size can be right.
  std::string problem(const std::vector<hsize_t>& offset, std::uint64_t stored, unsigned skipped) const {
    const auto applied = [skipped](int position) {
      return position >= 0 && (position >= 32 || !(skipped & (1u << position)));
    };
    const bool with_checksum = applied(checksum);
    const std::string place =
        "its chunk at " + coordinates_text(offset) + " is stored in " + count_of(stored, "byte", "bytes");
    if (with_checksum && stored < 4) return place + ", too few to hold its Fletcher-32 checksum (4 bytes)";
    if (applied(compressor)) return {};
    const std::uint64_t expected = chunk_bytes + (with_checksum ? 4 : 0);
    if (stored == expected) return {};
    const std::string values =
        coordinates_text(chunk) + " values of " + count_of(value_bytes, "byte", "bytes");
    if (!with_checksum)
      return place + ", but an unfiltered chunk of " + values + " takes " + std::to_string(chunk_bytes);
    return place + ", but an uncompressed chunk of " + values + " takes " + std::to_string(chunk_bytes) +
           ", with its Fletcher-32 checksum " + std::to_string(expected);
  }
};

// Where a chunked dataset's records are, when they are in a version 1 B-tree (HDF5's default
// chunk index, and h5py's: layout messages of versions 1 to 3); 0 for other indexes.
struct ChunkTree {
  std::uint64_t address = 0;
  unsigned dimensions = 0;  // the dataset's rank and one for the element
};

ChunkTree chunk_tree(const hdf5_format::HeaderFile& file, std::uint64_t header) {
  using namespace hdf5_format;
  constexpr unsigned layout_message = 0x0008;
  const HeaderMessages header_messages(file, header);
  for (const Message& message : header_messages.messages()) {
    if (message.type != layout_message) continue;
    Bytes bytes(message.data.data(), message.data.size());
    const unsigned version = bytes.byte("layout version");
    if (version == 1 || version == 2) {
      const unsigned dimensions = bytes.byte("layout dimensionality");
      const unsigned layout_class = bytes.byte("layout class");
      bytes.skip(5, "reserved bytes");
      if (layout_class != 2) return {};
      return {bytes.number(file.address_bytes(), "chunk index address"), dimensions};
    }
    if (version == 3 && bytes.byte("layout class") == 2) {
      const unsigned dimensions = bytes.byte("chunk dimensionality");
      return {bytes.number(file.address_bytes(), "chunk index address"), dimensions};
    }
    return {};
  }
  return {};
}

// The records of a version 1 B-tree chunk index, read from the file a node at a time (file format
// specification, "Version 1 B-trees"): "TREE", node type 1, level, entries used, two sibling
// addresses, then keys and children in turn. A key holds the chunk's stored size, its filter mask
// and its offset (one coordinate per dimension, the element's last); a leaf's child is the
// chunk's address. One pass over the tree, for datasets of more chunks than HDF5's own record
// queries can walk (largest_checked_chunk_count). Nodes that cannot be read are HDF5's to report.
std::string walk_chunk_tree(const hdf5_format::HeaderFile& file, const ChunkTree& tree,
                            const RecordRule& rule) {
  using namespace hdf5_format;
  if (tree.dimensions != rule.chunk.size() + 1) return {};  // refused by the object-header check
  const unsigned address_bytes = file.address_bytes();
  const std::uint64_t key_bytes = 8 + 8 * std::uint64_t{tree.dimensions};
  constexpr unsigned deepest = 64;
  std::vector<std::pair<std::uint64_t, unsigned>> nodes = {{tree.address, deepest}};
  std::set<std::uint64_t> seen;
  std::vector<hsize_t> offset(rule.chunk.size());
  while (!nodes.empty()) {
    const auto [address, depth_left] = nodes.back();
    nodes.pop_back();
    if (!seen.insert(address).second)
      return "its chunk index refers to the node at byte " + std::to_string(file.absolute(address)) +
             " twice";
    std::vector<std::uint8_t> node;
    const std::uint64_t fixed = 8 + 2 * std::uint64_t{address_bytes};
    if (!file.read(address, fixed, node) || std::memcmp(node.data(), "TREE", 4) != 0 || node[4] != 1)
      continue;
    const unsigned level = node[5];
    const std::uint64_t entries = Bytes(node.data() + 6, 2).number(2, "entries used");
    if (level > 0 && depth_left == 0) return "its chunk index is deeper than 64 levels";
    if (!file.read(address, fixed + entries * (key_bytes + address_bytes) + key_bytes, node)) continue;
    Bytes body(node.data() + fixed, node.size() - fixed);
    for (std::uint64_t entry = 0; entry < entries; ++entry) {
      const std::uint64_t stored = body.number(4, "chunk size");
      const unsigned skipped = static_cast<unsigned>(body.number(4, "filter mask"));
      for (std::size_t axis = 0; axis < offset.size(); ++axis) offset[axis] = body.number(8, "chunk offset");
      body.skip(8, "element offset");
      const std::uint64_t child = body.number(address_bytes, "child address");
      if (level > 0) {
        nodes.emplace_back(child, depth_left - 1);
      } else if (std::string problem = rule.problem(offset, stored, skipped); !problem.empty()) {
        return problem;
      }
    }
  }
  return {};
}

// The records of a chunk index of more than largest_checked_chunk_count chunks: walked in the
// file when they are in a version 1 B-tree; other indexes (files written for HDF5 1.10's newest
// format) are left to HDF5.
std::string many_chunk_records_problem(hid_t dataset, const RecordRule& rule) {
  using namespace hdf5_format;
  const std::optional<ObjectFacts> object = object_facts(dataset, ".");
  FileFacts facts;
  if (!object || !describe_file(dataset, facts)) return {};
  std::string path;
  if (facts.descriptor < 0) {  // under HDF5's MPI-IO driver: read through a descriptor of its own
    const ssize_t length = H5Fget_name(dataset, nullptr, 0);
    if (length <= 0) return {};
    path.resize(static_cast<std::size_t>(length) + 1);
    H5Fget_name(dataset, path.data(), path.size());
    path.resize(static_cast<std::size_t>(length));
  }
  const HeaderFile file(facts.descriptor, path, facts.base, facts.address_bytes, facts.length_bytes);
  if (!file.readable()) return {};
  try {
    const ChunkTree tree = chunk_tree(file, object->header_address);
    if (tree.address == 0) return {};
    return walk_chunk_tree(file, tree, rule);
  } catch (const Damage& damage) {
    return "its chunk index is damaged: " + damage.what;
  }
}

// Every record of the chunk index against the rule (RecordRule).
// All records, not the one a lookup of each chunk's coordinates returns: HDF5's own lookup
// (a binary search over the records' keys) and H5Dget_chunk_info_by_coord (the first record in
// index order) can return different records of a damaged index for the same chunk.
std::string chunk_records_problem(hid_t dataset, hid_t space, const RecordRule& rule) {
  hsize_t records = 0;
  if (H5Dget_num_chunks(dataset, space, &records) < 0) return "its chunk index cannot be read";
  if (records > largest_checked_chunk_count) return many_chunk_records_problem(dataset, rule);
  std::vector<hsize_t> offset(rule.chunk.size());
  for (hsize_t record = 0; record < records; ++record) {
    unsigned skipped = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t stored = 0;
    if (H5Dget_chunk_info(dataset, space, record, offset.data(), &skipped, &address, &stored) < 0)
      return "its chunk index cannot be read (record " + std::to_string(record) + ")";
    if (address == HADDR_UNDEF) continue;
    if (std::string problem = rule.problem(offset, stored, skipped); !problem.empty()) return problem;
  }
  return {};
}

// A chunked dataset's chunk extent, one per axis of its dataspace (`chunk`), or empty where HDF5
// cannot say or the two ranks disagree, which the ranks then tell.
struct ChunkShape {
  int dataset_rank = -1;
  int chunk_rank = -1;
  std::vector<hsize_t> chunk;
};

ChunkShape chunk_shape(hid_t space, hid_t creation) {
  ChunkShape shape;
  shape.dataset_rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> chunk(H5S_MAX_RANK, 0);
  shape.chunk_rank = H5Pget_chunk(creation, H5S_MAX_RANK, chunk.data());
  // HDF5 chunks only datasets of rank 1 or more.
  if (shape.dataset_rank >= 1 && shape.chunk_rank == shape.dataset_rank) {
    chunk.resize(static_cast<std::size_t>(shape.dataset_rank));
    shape.chunk = std::move(chunk);
  }
  return shape;
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
  const std::uint64_t value_bytes = type.valid() ? stored_value_bytes(dataset) : 0;
  const auto values = static_cast<std::uint64_t>(points);
  if (!creation.valid() || points < 0 || !type.valid()) {
    problem = "its dataspace, datatype or storage layout cannot be read";
  } else if (value_bytes == 0) {
    problem = "its datatype (" + describe_type(type.get()) +
              ") holds variable-length values or references inside a compound or an array, which phalanx "
              "never reads";
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
        ChunkShape shape = chunk_shape(space.get(), creation.get());
        if (shape.chunk.empty()) {
          problem = shape.chunk_rank == shape.dataset_rank
                        ? std::string("its chunk shape cannot be read")
                        : "its chunks have " + std::to_string(shape.chunk_rank) +
                              " dimensions, the dataset " + std::to_string(shape.dataset_rank);
          break;
        }
        std::vector<hsize_t> chunk = std::move(shape.chunk);
        const FilterPipeline pipeline = filter_pipeline(creation.get());
        if (!pipeline.problem.empty()) {
          problem = pipeline.problem;
          break;
        }
        RecordRule rule{chunk, value_bytes, value_bytes, pipeline.compressor, pipeline.checksum};
        for (const hsize_t extent : chunk) rule.chunk_bytes *= extent;  // below 4 GiB: refused at open
        problem = chunk_records_problem(dataset, space.get(), rule);
        break;
      }
      default: break;  // virtual datasets store nothing of their own
    }
  }
  return problem;
}

std::string unwritten_storage_problem(hid_t dataset) {
  silence_hdf5_error_printing();
  const Hdf5Handle space = dataspace_handle(H5Dget_space(dataset));
  const Hdf5Handle creation = property_list_handle(H5Dget_create_plist(dataset));
  if (!space.valid() || !creation.valid()) return "its dataspace or storage layout cannot be read";
  if (H5Sget_simple_extent_npoints(space.get()) <= 0) return {};
  switch (H5Pget_layout(creation.get())) {
    case H5D_CONTIGUOUS:
      // External files hold the values elsewhere: HDF5 gives no address, and reads them there.
      if (H5Pget_external_count(creation.get()) > 0) return {};
      if (H5Dget_offset(dataset) == HADDR_UNDEF)
        return "its values were never written (no storage: HDF5 would read zeros)";
      return {};
    case H5D_CHUNKED: {
      const ChunkShape shape = chunk_shape(space.get(), creation.get());
      const int rank = shape.dataset_rank;
      std::vector<hsize_t> dimensions(static_cast<std::size_t>(std::max(rank, 0)));
      if (shape.chunk.empty() || H5Sget_simple_extent_dims(space.get(), dimensions.data(), nullptr) < 0)
        return "its shape or chunk shape cannot be read";
      const std::vector<hsize_t>& chunk = shape.chunk;
      // Chunks the shape needs; a count past 2^64 cannot be stored, so it saturates.
      std::uint64_t needed = 1;
      for (int axis = 0; axis < rank; ++axis) {
        const auto index = static_cast<std::size_t>(axis);
        if (chunk[index] == 0) return "its chunk shape has an empty side";
        const std::uint64_t along = (dimensions[index] + chunk[index] - 1) / chunk[index];
        needed = along != 0 && needed > std::numeric_limits<std::uint64_t>::max() / along
                     ? std::numeric_limits<std::uint64_t>::max()
                     : needed * along;
      }
      hsize_t stored = 0;
      if (H5Dget_num_chunks(dataset, space.get(), &stored) < 0) return "its chunk index cannot be read";
      if (stored < needed)
        return "only " + std::to_string(stored) + " of its " + std::to_string(needed) +
               " chunks were written (HDF5 would read zeros for the rest: a writer that stopped, or a "
               "shape larger than the data)";
      return {};
    }
    default: return {};
  }
}

void require_sound_dataset_storage(hid_t dataset, const std::string& place) {
  const std::string problem = dataset_storage_problem(dataset);
  if (!problem.empty()) throw_input_error(place + ": " + problem + " (file corrupt?)");
}

}  // namespace phalanx::data::detail
