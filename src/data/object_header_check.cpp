// The object-header check (object_header_check.hpp says why it exists). It reads an object's
// header the way the HDF5 file format specification lays it out (version 1 and version 2 object
// headers, their continuation chunks, and the messages HDF5 decodes when a dataset is opened or
// an attribute looked up) and refuses a message whose parts do not fit inside it. It checks
// sizes, not meaning: what a message says is HDF5's to judge once it can decode it safely.
#include "phalanx/data/object_header_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hdf5_header_reading.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/checked_file_driver.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "phalanx/data/hdf5_objects.hpp"

namespace phalanx::data::detail {
namespace {

using namespace hdf5_format;

constexpr unsigned maximum_rank = 32;                // H5S_MAX_RANK
constexpr unsigned maximum_layout_dimensions = 33;   // H5O_LAYOUT_NDIMS: the rank and the element
constexpr int maximum_datatype_depth = 16;           // nesting of compound, array, enum, vlen types
constexpr int maximum_committed_datatype_depth = 4;  // a shared datatype's own header, and so on

// The message types the check reads (file format specification, "Header Message Types").
enum MessageType : unsigned {
  dataspace_message = 0x0001,
  link_info_message = 0x0002,
  datatype_message = 0x0003,
  old_fill_value_message = 0x0004,
  fill_value_message = 0x0005,
  link_message = 0x0006,
  layout_message = 0x0008,
  filter_pipeline_message = 0x000B,
  attribute_message = 0x000C,
  symbol_table_message = 0x0011,
};

class HeaderCheck {
 public:
  explicit HeaderCheck(const HeaderFile& file) : file_(file) {}

  // Checks every message of the header at `address` that HDF5 decodes on open or attribute lookup.
  void check(std::uint64_t address, int depth) {
    const HeaderMessages header(file_, address);
    const std::vector<Message>& messages = header.messages();
    // A dataset's chunks hold elements of its datatype's size, wherever the datatype message lies
    // (HDF5 sizes chunks with it, not with the layout's own last dimension).
    element_size_ = unknown_size;
    dataspace_rank_ = unknown_size;
    bool has_datatype = false, has_dataspace = false, has_layout = false;
    for (const Message& message : messages) {
      has_datatype |= message.type == datatype_message;
      has_dataspace |= message.type == dataspace_message;
      has_layout |= message.type == layout_message;
      if (message.refers_to_shared()) continue;
      try {
        Bytes bytes(message.data.data(), message.data.size());
        if (message.type == datatype_message) element_size_ = datatype_size(bytes, 0);
        if (message.type == dataspace_message && bytes.left() >= 2) dataspace_rank_ = message.data[1];
      } catch (const Damage&) {
        // reported, with its message's place, when the loop below reaches it
      }
    }
    // HDF5 takes an object with a datatype and a dataspace for a dataset; opening one without a
    // layout fails after HDF5 has read (and leaks) its filter pipeline.
    if (has_datatype && has_dataspace && !has_layout)
      refuse("it has a datatype and a dataspace (a dataset's) but no layout message");
    for (std::size_t index = 0; index < messages.size(); ++index) {
      const Message& message = messages[index];
      current_ = "message " + std::to_string(index);
      try {
        check_message(message, depth);
      } catch (Damage& damage) {
        damage.what = current_ + ": " + damage.what;
        throw;
      }
    }
  }

 private:
  void check_message(const Message& message, int depth) {
    Bytes bytes(message.data.data(), message.data.size());
    if (message.refers_to_shared()) {
      // The message lives elsewhere: in the header of a committed datatype (checked in turn), or
      // in the file's shared-message heap (which phalanx does not read).
      const std::uint64_t committed = shared_address(bytes);
      if (committed != no_address && message.type == datatype_message)
        committed_datatype_size(committed, depth);
      return;
    }
    switch (message.type) {
      case dataspace_message:
        current_ += " (dataspace)";
        dataspace_elements(bytes);
        return;
      case datatype_message:
        current_ += " (datatype)";
        datatype_size(bytes, 0);
        return;
      case old_fill_value_message:
        current_ += " (fill value)";
        bytes.skip(bytes.number(4, "fill value size"), "fill value");
        return;
      case fill_value_message:
        current_ += " (fill value)";
        fill_value(bytes);
        return;
      case layout_message:
        current_ += " (layout)";
        layout(bytes);
        return;
      case filter_pipeline_message:
        current_ += " (filter pipeline)";
        filter_pipeline(bytes);
        return;
      case attribute_message:
        current_ += " (attribute)";
        attribute(bytes, depth);
        return;
      case link_info_message:
        current_ += " (link info)";
        link_info(bytes);
        return;
      case link_message:
        current_ += " (link)";
        link(bytes);
        return;
      case symbol_table_message:
        current_ += " (symbol table)";
        symbol_table(bytes);
        return;
      default: return;
    }
  }

  static constexpr std::uint64_t no_address = ~std::uint64_t{0};

  // A shared message's reference (file format specification, "Shared Message"): the address of
  // the object header holding the message, or no_address for one in the shared-message heap.
  std::uint64_t shared_address(Bytes& bytes) {
    const unsigned version = bytes.byte("shared message version");
    if (version == 1) {
      bytes.skip(7, "shared message type and reserved bytes");
      return bytes.number(file_.address_bytes(), "shared message address");
    }
    const unsigned kind = bytes.byte("shared message type");
    if (version == 3 && kind == 1) {
      bytes.skip(8, "shared message heap identifier");
      return no_address;
    }
    return bytes.number(file_.address_bytes(), "shared message address");
  }

  // The element size of the committed datatype whose header is at `address`.
  std::uint64_t committed_datatype_size(std::uint64_t address, int depth) {
    if (depth >= maximum_committed_datatype_depth)
      refuse("its shared datatypes refer to each other too deeply");
    const std::string outer = current_;
    const HeaderMessages header(file_, address);
    for (const Message& message : header.messages()) {
      if (message.type != datatype_message) continue;
      current_ = outer + ": the shared datatype at byte " + std::to_string(file_.absolute(address));
      Bytes bytes(message.data.data(), message.data.size());
      const std::uint64_t size = message.refers_to_shared()
                                     ? committed_size_or_unknown(shared_address(bytes), depth + 1)
                                     : datatype_size(bytes, 0);
      current_ = outer;
      return size;
    }
    return unknown_size;
  }

  static constexpr std::uint64_t unknown_size = ~std::uint64_t{0};

  std::uint64_t committed_size_or_unknown(std::uint64_t address, int depth) {
    return address == no_address ? unknown_size : committed_datatype_size(address, depth);
  }

  // A dataspace message: its number of elements.
  std::uint64_t dataspace_elements(Bytes& bytes) {
    const unsigned version = bytes.byte("dataspace version");
    if (version != 1 && version != 2) refuse("unknown dataspace version " + std::to_string(version));
    const unsigned rank = bytes.byte("dataspace rank");
    if (rank > maximum_rank)
      refuse("dataspace rank " + std::to_string(rank) + " is over " + std::to_string(maximum_rank));
    const unsigned flags = bytes.byte("dataspace flags");
    unsigned kind = rank == 0 ? 0 : 1;  // scalar or simple
    if (version == 1)
      bytes.skip(5, "reserved bytes");
    else
      kind = bytes.byte("dataspace type");
    std::uint64_t elements = kind == 2 ? 0 : 1;  // a null dataspace holds none
    for (unsigned dimension = 0; dimension < rank; ++dimension)
      elements = multiply_or_refuse(elements, bytes.number(file_.length_bytes(), "dimension size"),
                                    "the dataspace's element count");
    if (flags & 0x01) bytes.skip(std::uint64_t{rank} * file_.length_bytes(), "maximum dimension sizes");
    return elements;
  }

  // A datatype (file format specification, "Datatype"): its element size in bytes. For a
  // variable-length type, `sequence_item_size` (when given) receives its base type's size.
  std::uint64_t datatype_size(Bytes& bytes, int depth, std::uint64_t* sequence_item_size = nullptr) {
    if (depth > maximum_datatype_depth) refuse("its datatype nests more than 16 deep");
    const unsigned class_and_version = bytes.byte("datatype class and version");
    const unsigned type_class = class_and_version & 0x0f;
    const unsigned version = class_and_version >> 4;
    if (version < 1 || version > 4) refuse("unknown datatype version " + std::to_string(version));
    const std::uint64_t bit_field = bytes.number(3, "datatype bit field");
    const std::uint64_t size = bytes.number(4, "datatype size");
    // HDF5 converts numbers bit by bit at the places these properties give, inside elements of
    // `size` bytes: a place outside the element is a read past HDF5's conversion buffer.
    const std::uint64_t bits = multiply_or_refuse(size, 8, "the datatype's bit count");
    const auto require_inside = [&](std::uint64_t offset, std::uint64_t count, const char* what) {
      if (count == 0 || offset + count > bits)
        refuse(std::string("its ") + what + " (bits " + std::to_string(offset) + " to " +
               std::to_string(offset + count) + ") lies outside its " + std::to_string(size) +
               "-byte elements");
    };
    switch (type_class) {
      case 0:    // fixed-point: bit offset, precision
      case 4: {  // bitfield: the same
        const std::uint64_t offset = bytes.number(2, "bit offset");
        require_inside(offset, bytes.number(2, "precision"), "precision");
        break;
      }
      case 1: {  // floating-point: bit offset, precision, exponent and mantissa places, bias
        const std::uint64_t offset = bytes.number(2, "bit offset");
        const std::uint64_t precision = bytes.number(2, "precision");
        require_inside(offset, precision, "precision");
        const std::uint64_t exponent_place = bytes.byte("exponent location");
        const std::uint64_t exponent_bits = bytes.byte("exponent size");
        const std::uint64_t mantissa_place = bytes.byte("mantissa location");
        const std::uint64_t mantissa_bits = bytes.byte("mantissa size");
        bytes.skip(4, "exponent bias");
        const std::uint64_t sign_place = (bit_field >> 8) & 0xff;
        if (exponent_bits == 0 || exponent_place + exponent_bits > precision || mantissa_bits == 0 ||
            mantissa_place + mantissa_bits > precision || sign_place >= precision)
          refuse("its floating-point fields (sign at bit " + std::to_string(sign_place) + ", exponent " +
                 std::to_string(exponent_bits) + " bits at " + std::to_string(exponent_place) +
                 ", mantissa " + std::to_string(mantissa_bits) + " bits at " +
                 std::to_string(mantissa_place) + ") do not fit its precision of " +
                 std::to_string(precision) + " bits");
        break;
      }
      case 2:  // time: precision
        require_inside(0, bytes.number(2, "precision"), "precision");
        break;
      case 3:  // string
        if (size == 0) refuse("its strings are 0 bytes long");
        break;
      case 7:  // reference
        break;
      case 5:  // opaque: its ASCII tag
        bytes.skip(bit_field & 0xff, "opaque tag");
        break;
      case 6: compound_members(bytes, version, bit_field & 0xffff, size, depth); break;
      case 8: {  // enumeration: base type, member names, member values
        const std::uint64_t members = bit_field & 0xffff;
        const std::uint64_t base_size = datatype_size(bytes, depth + 1);
        for (std::uint64_t member = 0; member < members; ++member) {
          const std::size_t length = bytes.terminated_length("enumeration member name");
          bytes.skip(version < 3 ? align8(length) : length, "enumeration member name");
        }
        bytes.skip(multiply_or_refuse(members, base_size, "the enumeration's value bytes"),
                   "enumeration values");
        break;
      }
      case 9: {  // variable-length: base type
        // In a file every variable-length element is a length, a global heap collection's
        // address and an object index; HDF5 sets that size itself once it has decoded the type, so
        // a size stored otherwise made it copy past the value it had allocated at the stored one.
        const std::uint64_t stored_size = 4 + std::uint64_t{file_.address_bytes()} + 4;
        if (size != stored_size)
          refuse("its variable-length elements say they are " + std::to_string(size) +
                 " bytes, in a file they are " + std::to_string(stored_size));
        const std::uint64_t item_size = datatype_size(bytes, depth + 1);
        if (sequence_item_size) *sequence_item_size = item_size;
        break;
      }
      case 10: {  // array: rank, dimension sizes, (version 2) permutation, base type
        const unsigned rank = bytes.byte("array rank");
        if (rank > maximum_rank) refuse("array rank " + std::to_string(rank) + " is over 32");
        if (version < 3) bytes.skip(3, "reserved bytes");
        bytes.skip(std::uint64_t{rank} * 4, "array dimension sizes");
        if (version < 3) bytes.skip(std::uint64_t{rank} * 4, "array permutation");
        datatype_size(bytes, depth + 1);
        break;
      }
      default: refuse("unknown datatype class " + std::to_string(type_class));
    }
    return size;
  }

  void compound_members(Bytes& bytes, unsigned version, std::uint64_t members, std::uint64_t compound_size,
                        int depth) {
    // Version 3 stores a member's offset in as few bytes as the compound's size needs.
    unsigned offset_width = 1;
    while (offset_width < 4 && (compound_size >> (8 * offset_width)) != 0) ++offset_width;
    for (std::uint64_t member = 0; member < members; ++member) {
      const std::size_t length = bytes.terminated_length("compound member name");
      bytes.skip(version < 3 ? align8(length) : length, "compound member name");
      const std::uint64_t offset = bytes.number(version < 3 ? 4 : offset_width, "compound member offset");
      if (version == 1) {
        const unsigned rank = bytes.byte("compound member rank");
        if (rank > 4) refuse("a compound member's rank " + std::to_string(rank) + " is over 4");
        bytes.skip(3 + 4 + 4 + 16, "compound member dimensions");
      }
      const std::uint64_t member_size = datatype_size(bytes, depth + 1);
      std::uint64_t end = 0;
      if (__builtin_add_overflow(offset, member_size, &end) || end > compound_size)
        refuse("compound member " + std::to_string(member) + " (bytes " + std::to_string(offset) + " to " +
               std::to_string(offset + member_size) + ") lies outside the compound's " +
               std::to_string(compound_size) + " bytes");
    }
  }

  void fill_value(Bytes& bytes) {
    const unsigned version = bytes.byte("fill value version");
    if (version == 1 || version == 2) {
      bytes.skip(2, "allocation and write times");
      const unsigned defined = bytes.byte("fill value defined");
      // The size and the value are there only when a value is defined (HDF5 1.10 decodes
      // version 1 so too, whatever the specification's table says).
      if (defined) {
        const auto size = static_cast<std::int32_t>(bytes.number(4, "fill value size"));
        if (size > 0) bytes.skip(static_cast<std::uint64_t>(size), "fill value");
      }
    } else if (version == 3) {
      const unsigned flags = bytes.byte("fill value flags");
      if (flags & 0x20) bytes.skip(bytes.number(4, "fill value size"), "fill value");
    } else {
      refuse("unknown fill value version " + std::to_string(version));
    }
  }

  void layout(Bytes& bytes) {
    const unsigned version = bytes.byte("layout version");
    if (version == 1 || version == 2) {
      const unsigned dimensions = bytes.byte("layout dimensionality");
      if (dimensions > maximum_layout_dimensions)
        refuse("layout dimensionality " + std::to_string(dimensions) + " is over 33");
      const unsigned layout_class = bytes.byte("layout class");
      bytes.skip(5, "reserved bytes");
      if (layout_class != 0) bytes.skip(file_.address_bytes(), "data address");
      if (layout_class == 2)
        chunk_sizes(bytes, dimensions, 4);
      else
        bytes.skip(std::uint64_t{dimensions} * 4, "dimension sizes");
      if (layout_class == 0) bytes.skip(bytes.number(4, "compact data size"), "compact data");
      return;
    }
    if (version != 3 && version != 4) refuse("unknown layout version " + std::to_string(version));
    const unsigned layout_class = bytes.byte("layout class");
    switch (layout_class) {
      case 0:  // compact: the data is in the message
        bytes.skip(bytes.number(2, "compact data size"), "compact data");
        return;
      case 1:  // contiguous
        bytes.skip(file_.address_bytes() + file_.length_bytes(), "address and size");
        return;
      case 2:
        if (version == 3) {
          const unsigned dimensions = bytes.byte("chunk dimensionality");
          if (dimensions < 1 || dimensions > maximum_layout_dimensions)
            refuse("chunk dimensionality " + std::to_string(dimensions) + " is outside 1 to 33");
          bytes.skip(file_.address_bytes(), "chunk index address");
          chunk_sizes(bytes, dimensions, 4);
        } else {
          chunked_version_four(bytes);
        }
        return;
      case 3:  // virtual (version 4): the global heap holding the mappings
        bytes.skip(file_.address_bytes() + 4, "virtual dataset heap address and index");
        return;
      default: refuse("unknown layout class " + std::to_string(layout_class));
    }
  }

  // A chunk's sizes (the last stands for the element's size): each positive, and a chunk under
  // 4 GB. HDF5 1.10 refuses either only after allocating what it then leaks.
  void chunk_sizes(Bytes& bytes, unsigned dimensions, unsigned width) {
    // One size per axis of the dataspace, and the element's: HDF5 reads sizes for the axes it
    // has whatever the layout stores, and refuses a zero it finds (leaking, as above).
    if (dataspace_rank_ != unknown_size && dimensions != dataspace_rank_ + 1)
      refuse("its chunks have " + std::to_string(dimensions) + " sizes, the dataspace's " +
             std::to_string(dataspace_rank_) + " axes need " + std::to_string(dataspace_rank_ + 1));
    std::uint64_t chunk_bytes = 1;
    for (unsigned dimension = 0; dimension < dimensions; ++dimension) {
      std::uint64_t size = bytes.number(width, "chunk dimension size");
      if (size == 0) refuse("chunk dimension " + std::to_string(dimension) + " is 0");
      if (dimension + 1 == dimensions && element_size_ != unknown_size && element_size_ > 0)
        size = element_size_;
      chunk_bytes = multiply_or_refuse(chunk_bytes, size, "the chunk's byte count");
    }
    if (chunk_bytes >= (std::uint64_t{1} << 32))
      refuse("its chunks of " + std::to_string(chunk_bytes) + " bytes are over HDF5's 4 GB");
  }

  void chunked_version_four(Bytes& bytes) {
    const unsigned flags = bytes.byte("chunked layout flags");
    const unsigned dimensions = bytes.byte("chunk dimensionality");
    if (dimensions < 1 || dimensions > maximum_layout_dimensions)
      refuse("chunk dimensionality " + std::to_string(dimensions) + " is outside 1 to 33");
    const unsigned width = bytes.byte("chunk dimension width");
    if (width < 1 || width > 8)
      refuse("chunk dimension width " + std::to_string(width) + " is outside 1 to 8");
    chunk_sizes(bytes, dimensions, width);
    const unsigned index_type = bytes.byte("chunk index type");
    switch (index_type) {
      case 1:  // a single chunk: its filtered size and filter mask when filtered
        if (flags & 0x02) bytes.skip(file_.length_bytes() + 4, "filtered chunk size and mask");
        break;
      case 2:  // implicit
        break;
      case 3:  // fixed array: page bits
        bytes.skip(1, "fixed array parameters");
        break;
      case 4:  // extensible array
        bytes.skip(5, "extensible array parameters");
        break;
      case 5:  // version 2 B-tree
        bytes.skip(6, "B-tree parameters");
        break;
      default: refuse("unknown chunk index type " + std::to_string(index_type));
    }
    bytes.skip(file_.address_bytes(), "chunk index address");
  }

  void filter_pipeline(Bytes& bytes) {
    const unsigned version = bytes.byte("filter pipeline version");
    if (version != 1 && version != 2) refuse("unknown filter pipeline version " + std::to_string(version));
    const unsigned filters = bytes.byte("filter count");
    if (filters > 32) refuse("filter count " + std::to_string(filters) + " is over 32");
    if (version == 1) bytes.skip(6, "reserved bytes");
    for (unsigned filter = 0; filter < filters; ++filter) {
      const std::uint64_t identifier = bytes.number(2, "filter identifier");
      const std::uint64_t name_length =
          (version == 1 || identifier >= 256) ? bytes.number(2, "filter name length") : 0;
      bytes.skip(2, "filter flags");
      const std::uint64_t values = bytes.number(2, "filter parameter count");
      if (name_length > 0) {
        Bytes name = bytes.part(name_length, "filter name");
        name.terminated_length("filter name");
      }
      bytes.skip(values * 4, "filter parameters");
      if (version == 1 && values % 2 == 1) bytes.skip(4, "filter parameter padding");
    }
  }

  void attribute(Bytes& bytes, int depth) {
    const unsigned version = bytes.byte("attribute version");
    if (version < 1 || version > 3) refuse("unknown attribute version " + std::to_string(version));
    const unsigned flags = bytes.byte("attribute flags");
    const std::uint64_t name_size = bytes.number(2, "attribute name size");
    const std::uint64_t datatype_bytes = bytes.number(2, "attribute datatype size");
    const std::uint64_t dataspace_bytes = bytes.number(2, "attribute dataspace size");
    if (version == 3) bytes.skip(1, "attribute name encoding");
    // Version 1 pads the name, datatype and dataspace to 8 bytes each.
    const auto padded = [&](std::uint64_t size) { return version == 1 ? align8(size) : size; };

    Bytes name = bytes.part(padded(name_size), "name");
    if (name_size == 0) refuse("its name is empty (no NUL)");
    const std::size_t name_length = name.terminated_length("name");
    current_ += " \"" + printable(name.here(), name_length - 1) + "\"";
    if (name_length != name_size)
      refuse("its name is " + std::to_string(name_length) + " bytes with the NUL, the message says " +
             std::to_string(name_size));

    Bytes type = bytes.part(padded(datatype_bytes), "datatype");
    std::uint64_t element_size = unknown_size;
    std::uint64_t sequence_item_size = unknown_size;  // set for a variable-length type
    if (flags & 0x01) {
      element_size = committed_size_or_unknown(shared_address(type), depth + 1);
    } else {
      Bytes exact = type.part(datatype_bytes, "datatype");
      element_size = datatype_size(exact, 0, &sequence_item_size);
    }

    Bytes space = bytes.part(padded(dataspace_bytes), "dataspace");
    if (flags & 0x02) return;  // a dataspace in the shared-message heap: its size is not known here
    Bytes exact_space = space.part(dataspace_bytes, "dataspace");
    const std::uint64_t elements = dataspace_elements(exact_space);
    if (element_size == unknown_size) return;
    const std::uint64_t value_bytes =
        multiply_or_refuse(elements, element_size, "the attribute value's size");
    if (value_bytes > bytes.left())
      refuse("its value of " + std::to_string(elements) + " element" + (elements == 1 ? "" : "s") + " of " +
             std::to_string(element_size) + " bytes runs past the message (" + std::to_string(bytes.left()) +
             " bytes left)");
    if (sequence_item_size != unknown_size) sequences_in_heap(bytes, elements, sequence_item_size);
  }

  // A group's index of links in its dense storage (what HDF5 reads before a lookup in it).
  void link_info(Bytes& bytes) {
    const unsigned version = bytes.byte("link info version");
    if (version != 0) refuse("unknown link info version " + std::to_string(version));
    const unsigned flags = bytes.byte("link info flags");
    if (flags & 0x01) bytes.skip(8, "maximum creation index");
    bytes.skip(file_.address_bytes() * ((flags & 0x02) ? 3u : 2u), "heap and index addresses");
  }

  // One link of a group in the compact form (a header message per link). HDF5 1.10 copies the
  // name and a soft or external link's value at the lengths they state, not bounded by the
  // message, when it looks a name up in the group.
  void link(Bytes& bytes) {
    const unsigned version = bytes.byte("link version");
    if (version != 1) refuse("unknown link version " + std::to_string(version));
    const unsigned flags = bytes.byte("link flags");
    if (flags & ~0x1Fu) refuse("link flags " + std::to_string(flags) + " hold unknown bits");
    const unsigned link_type = (flags & 0x08) ? bytes.byte("link type") : 0;
    if (flags & 0x04) bytes.skip(8, "creation order");
    if (flags & 0x10) bytes.skip(1, "name encoding");
    const std::uint64_t name_size = bytes.number(1u << (flags & 0x03), "name length");
    if (name_size == 0) refuse("its name is empty");
    Bytes name = bytes.part(name_size, "name");
    current_ += " \"" + printable(name.here(), static_cast<std::size_t>(name_size)) + "\"";
    if (link_type == 0)
      bytes.skip(file_.address_bytes(), "object address");
    else
      bytes.skip(bytes.number(2, "link value length"), "link value");
  }

  // A group in the old form: the B-tree of its names and the local heap holding them. HDF5 1.10
  // reads either at its address without checking that it is one inside the file (an undefined
  // address made it copy into a buffer it never got).
  void symbol_table(Bytes& bytes) {
    const std::uint64_t tree = bytes.number(file_.address_bytes(), "B-tree address");
    const std::uint64_t heap = bytes.number(file_.address_bytes(), "local heap address");
    // A B-tree node's fixed part: "TREE", type, level, entries used, two sibling addresses.
    if (!file_.holds(tree, 8 + 2 * std::uint64_t{file_.address_bytes()}))
      refuse("its B-tree address " + std::to_string(tree) + " lies past the file's end");
    if (!file_.holds(heap, 8 + 2 * std::uint64_t{file_.length_bytes()} + file_.address_bytes()))
      refuse("its local heap address " + std::to_string(heap) + " lies past the file's end");
    local_heap(heap);
  }

  // The local heap of a group in the old form (a symbol table), which holds the group's names:
  // "HEAP", version 0, three reserved bytes, the data block's size, the offset of its first free
  // block and the data block's address. HDF5 1.10 reads the heap into room for the size it states
  // plus the prefix, a sum that wraps around (a size of 2^64 - 1 made it copy a negative size),
  // and walks the free list reading each block's two lengths without checking they fit in the
  // block, or that the list ends.
  void local_heap(std::uint64_t address) {
    const unsigned length_bytes = file_.length_bytes();
    const std::uint64_t prefix_bytes = 8 + 2 * length_bytes + file_.address_bytes();
    std::vector<std::uint8_t> prefix;
    if (!file_.read(address, prefix_bytes, prefix) || std::memcmp(prefix.data(), "HEAP", 4) != 0 ||
        prefix[4] != 0)
      return;  // not a local heap HDF5 reads: it refuses it itself
    Bytes fields(prefix.data() + 8, prefix.size() - 8);
    const std::uint64_t data_size = fields.number(length_bytes, "local heap data size");
    std::uint64_t free_block = fields.number(length_bytes, "local heap free list head");
    const std::uint64_t data_address = fields.number(file_.address_bytes(), "local heap data address");
    const std::string where = "its local heap at byte " + std::to_string(file_.absolute(address));
    if (data_size == 0) return;
    if (!file_.holds(data_address, data_size))
      refuse(where + " says its data block holds " + std::to_string(data_size) + " bytes at byte " +
             std::to_string(file_.absolute(data_address)) + ", past the file's end");
    constexpr std::uint64_t no_free_block = 1;  // H5HL_FREE_NULL
    const std::uint64_t free_header_bytes = 2 * std::uint64_t{length_bytes};
    for (std::uint64_t blocks = 0; free_block != no_free_block; ++blocks) {
      if (blocks > data_size / free_header_bytes) refuse(where + ": its free list loops");
      if (free_block > data_size || data_size - free_block < free_header_bytes)
        refuse(where + ": a free block at offset " + std::to_string(free_block) + " does not fit in its " +
               std::to_string(data_size) + " bytes");
      std::vector<std::uint8_t> header;
      if (!file_.read(data_address + free_block, free_header_bytes, header)) return;
      Bytes lengths(header.data(), header.size());
      const std::uint64_t next = lengths.number(length_bytes, "next free block");
      const std::uint64_t size = lengths.number(length_bytes, "free block size");
      if (size > data_size - free_block)
        refuse(where + ": a free block of " + std::to_string(size) + " bytes at offset " +
               std::to_string(free_block) + " runs past its " + std::to_string(data_size) + " bytes");
      free_block = next;
    }
  }

  // The values of a variable-length attribute (strings, as h5py writes them): each says where its
  // items are, an object of a global heap collection. HDF5 1.10 looks the object up by its index
  // without checking that the collection holds it (a damaged index read past HDF5's table of
  // objects and crashed), and copies the object whole into room it allocates for the items the
  // value counts.
  void sequences_in_heap(Bytes& value, std::uint64_t elements, std::uint64_t item_size) {
    for (std::uint64_t element = 0; element < elements; ++element) {
      const std::uint64_t items = value.number(4, "variable-length item count");
      const std::uint64_t collection = value.number(file_.address_bytes(), "global heap collection address");
      const std::uint64_t index = value.number(4, "global heap object index");
      if (items == 0) continue;  // an empty value: HDF5 reads no object
      const std::string where = "its value " + std::to_string(element) + " refers to object " +
                                std::to_string(index) + " of the global heap collection at byte " +
                                std::to_string(file_.absolute(collection));
      const std::uint64_t room = multiply_or_refuse(items, item_size, "the value's byte count");
      // HDF5 allocates that room before it reads the collection, so this comes first, even where
      // the collection is damaged (a count of 3.5 billion took 10 GB before the checked driver
      // could refuse the collection).
      if (!file_.holds(collection, room))
        refuse(where + ": its " + std::to_string(items) + " items of " + std::to_string(item_size) +
               (item_size == 1 ? " byte" : " bytes") + " would run past the file's end");
      const std::map<std::uint64_t, std::uint64_t>* objects = heap_objects(collection, where);
      if (objects == nullptr) continue;  // a damaged collection: the checked driver refuses it
      const auto found = objects->find(index);
      if (index == 0 || found == objects->end()) refuse(where + ", which the collection does not hold");
      // HDF5 writes an object of exactly the value's items; it reads one into room for the
      // items the value counts (a count of billions made it allocate gigabytes for a small string).
      if (found->second != room)
        refuse(where + ", of " + std::to_string(found->second) + " bytes, not the " + std::to_string(room) +
               " bytes of its " + std::to_string(items) + " items of " + std::to_string(item_size) +
               " bytes");
    }
  }

  // The objects of the global heap collection at `address` (index to size), read once per check,
  // walked as HDF5 walks them: "GCOL", version 1, three reserved bytes and the collection's size,
  // then objects (index, reference count, reserved bytes, size: a header padded to 8 bytes, then
  // the data padded to 8), where free space (index 0) is passed by its size, header included.
  // Null when the collection is damaged: the checked driver refuses it, in its own words, when
  // HDF5 reads it (checked_file_driver.hpp), before HDF5 looks up an object in it.
  // An address that holds no collection at all is refused here: HDF5 fails on it too, but only
  // after converting the values before it, whose strings it then leaks.
  const std::map<std::uint64_t, std::uint64_t>* heap_objects(std::uint64_t address,
                                                             const std::string& where) {
    const auto known = collections_.find(address);
    if (known != collections_.end()) return known->second ? &*known->second : nullptr;
    auto& objects = collections_[address];
    const unsigned length_bytes = file_.length_bytes();
    const std::uint64_t header_bytes = align8(8 + length_bytes);
    std::vector<std::uint8_t> bytes;
    if (!file_.read(address, 8 + length_bytes, bytes) || std::memcmp(bytes.data(), "GCOL", 4) != 0 ||
        bytes[4] != 1)
      refuse(where + ", which is not a global heap collection");
    const std::uint64_t size = Bytes(bytes.data() + 8, length_bytes).number(length_bytes, "collection size");
    if (size < header_bytes || !file_.read(address, size, bytes)) return nullptr;
    std::map<std::uint64_t, std::uint64_t> found;
    for (std::uint64_t position = header_bytes; size - position >= header_bytes;) {
      Bytes object(bytes.data() + position, static_cast<std::size_t>(header_bytes));
      const std::uint64_t index = object.number(2, "heap object index");
      object.skip(6, "heap object reference count and reserved bytes");
      const std::uint64_t object_size = object.number(length_bytes, "heap object size");
      if (index == 0) {
        if (object_size == 0 || object_size > size - position) return nullptr;
        position += object_size;
      } else {
        if (object_size > size - position - header_bytes) return nullptr;
        found[index] = object_size;
        position += header_bytes + align8(object_size);
      }
    }
    objects = std::move(found);
    return &*objects;
  }

  const HeaderFile& file_;
  std::string current_;
  std::map<std::uint64_t, std::optional<std::map<std::uint64_t, std::uint64_t>>> collections_;
  std::uint64_t element_size_ = unknown_size;    // of the header's datatype message, when it has one
  std::uint64_t dataspace_rank_ = unknown_size;  // of its dataspace message, when it has one
};

// The object's name from the file's root, for messages: `name` joined to where `location` is.
std::string object_name(hid_t location, const std::string& name) {
  if (!name.empty() && name.front() == '/') return name;
  std::string base;
  const ssize_t length = H5Iget_name(location, nullptr, 0);
  if (length > 0) {
    base.resize(static_cast<std::size_t>(length) + 1);
    H5Iget_name(location, base.data(), base.size());
    base.resize(static_cast<std::size_t>(length));
  }
  if (name == "." || name.empty()) return base.empty() ? "/" : base;
  if (base.empty() || base.back() != '/') base += '/';
  return base + name;
}

// What the check keeps of the file it checked last: its facts, asked of HDF5 once per open file
// (a load checks hundreds of objects of one file in a row, and copying the file's two property
// lists for each took most of a check's time), and the headers that passed, so the groups on the
// way to each of those objects are checked once. Kept for HDF5's number of the open file (from
// H5Oget_info), which no later open reuses; callers hold the HDF5 lock, which guards it.
struct FileMemory {
  bool known = false;
  unsigned long file_number = 0;
  FileFacts facts;
  std::set<haddr_t> passed;
  // Groups on the way to an absolute name that passed, by name: a load names a thousand objects
  // under a few groups, and asking HDF5 where each group's header is took half the checks' time.
  std::set<std::string> passed_groups;
  // HDF5's identifier of the open file whose root passed (identifiers are not reused while a
  // process runs): a later check in the same file skips asking HDF5 about the root again, which
  // cost as much as checking an object.
  hid_t root_passed_in = H5I_INVALID_HID;
  // Absolute names found to be hard links in that file (check_before_hdf5_loads asks of each part
  // of a name).
  std::set<std::string> hard_links;
};

FileMemory& file_memory() {
  static FileMemory memory;
  return memory;
}

// The facts of the file `location` is in; false when HDF5 cannot describe it.
bool file_facts(hid_t location, unsigned long file_number, FileFacts& facts) {
  FileMemory& memory = file_memory();
  if (memory.known && memory.file_number == file_number) {
    facts = memory.facts;
    return true;
  }
  if (!describe_file(location, facts)) return false;
  memory = FileMemory{true, file_number, facts, {}, {}, H5I_INVALID_HID, {}};
  return true;
}

// Checks the header at `address` of the file `facts` describes, the one `name` leads to, once per
// open file; false when the check cannot read the file. A chunk past the file's end is refused
// with the rest: HDF5 allocates each chunk at its stated size before it reads it.
bool check_header_at(hid_t location, const std::string& name, const std::string& path, const FileFacts& facts,
                     haddr_t address) {
  if (file_memory().passed.count(address)) return true;
  const HeaderFile header_file(facts.descriptor, path, facts.base, facts.address_bytes, facts.length_bytes);
  if (!header_file.readable()) return false;
  const std::string place = path + ": " + object_name(location, name) + ": object header at byte " +
                            std::to_string(header_file.absolute(address)) + ": ";
  try {
    const HeaderMessages header(header_file, address);
    if (const auto& past = header.chunk_past_end())
      throw_input_error(place + "a chunk of " + std::to_string(past->second) + " bytes at byte " +
                        std::to_string(header_file.absolute(past->first)) +
                        " runs past the file's end (file corrupt?)");
    HeaderCheck(header_file).check(address, 0);
  } catch (const Damage& damage) {
    throw_input_error(place + damage.what + " (file corrupt?)");
  }
  file_memory().passed.insert(address);
  return true;
}

// HDF5 loads an object's header to say anything of it (H5Oget_info), allocating its first chunk
// at the size the header states: 4 and 8 GB for files of a few KB (found by the dataset fuzzer).
// Where every part of `name` is a hard link, the header's address is in the link, in a group
// already checked, and the header is in `location`'s file: it is checked there before HDF5 loads
// it. (A soft or external link on the way is left to the check after HDF5 has found the object.)
void check_before_hdf5_loads(hid_t location, const std::string& name, const std::string& path,
                             bool this_file) {
  if (name.empty() || name == "." || name == "/") return;
  // `this_file`: `name` is absolute and the memory is of `location`'s file (check_object_header).
  FileMemory& memory = file_memory();
  std::optional<haddr_t> address;
  for (std::size_t slash = name.find('/', 1);; slash = name.find('/', slash + 1)) {
    const std::string part = slash == std::string::npos ? name : name.substr(0, slash);
    const bool last = slash == std::string::npos;
    if (part != "/" && (last || !this_file || !memory.hard_links.count(part))) {
      address = hard_link_address(location, part.c_str());
      if (!address) return;
      if (this_file && !last) memory.hard_links.insert(part);
    }
    if (last) break;
  }
  FileFacts facts;
  if (this_file) {
    facts = memory.facts;
  } else {
    const std::optional<ObjectFacts> here = object_facts(location, ".");
    if (!here || !file_facts(location, here->file_number, facts)) return;
  }
  check_header_at(location, name, path, facts, *address);
}

// Checks the one header `name` leads to (its parent groups already checked). True when it
// passed, or had passed before; false when the check left it alone (no such object, or a file
// the check cannot read).
bool check_one_header(hid_t location, const std::string& name, const std::string& path,
                      bool this_file = false) {
  check_before_hdf5_loads(location, name, path, this_file);
  const std::optional<ObjectFacts> object = object_facts(location, name.c_str());
  if (!object) {
    // A name that leads nowhere is the caller's to report ("missing"). One that leads to a header
    // HDF5 cannot read is damage: opening it anyway fails too, after HDF5 1.10 has allocated
    // what it then leaks.
    if (H5Oexists_by_name(location, name.c_str(), H5P_DEFAULT) > 0)
      throw_input_error(path + ": " + object_name(location, name) +
                        ": its object header cannot be read (file corrupt?)");
    return false;
  }
  FileFacts facts;
  return file_facts(location, object->file_number, facts) &&
         check_header_at(location, name, path, facts, object->header_address);
}

}  // namespace

void check_object_header(hid_t location, const std::string& name, const std::string& path) {
  // HDF5 finds `name` by looking each of its parts up in the group before it, decoding that
  // group's links (or its symbol table and local heap): each group on the way is checked before
  // HDF5 looks into it, starting with `location` itself.
  const bool absolute = !name.empty() && name.front() == '/';
  FileMemory& memory = file_memory();
  // A root that passed makes the memory this file's: its groups that passed are known by name.
  bool this_file = false;
  if (absolute) {
    const Hdf5Handle file = file_handle(H5Iget_file_id(location));
    this_file = file.valid() && memory.known && memory.root_passed_in == file.get();
    if (!this_file && check_one_header(location, "/", path) && file.valid()) {
      memory.root_passed_in = file.get();
      this_file = true;
    }
  } else {
    check_one_header(location, ".", path);
  }
  for (std::size_t slash = name.find('/', 1); slash != std::string::npos; slash = name.find('/', slash + 1)) {
    if (name[slash - 1] == '/') continue;
    const std::string group = name.substr(0, slash);
    if (this_file && memory.passed_groups.count(group)) continue;
    if (check_one_header(location, group, path, this_file) && this_file) memory.passed_groups.insert(group);
  }
  if (name != "/" && name != ".") check_one_header(location, name, path, this_file);
}

Hdf5Handle open_checked_dataset(hid_t location, const std::string& name, const std::string& path) {
  check_object_header(location, name, path);
  return dataset_handle(H5Dopen2(location, name.c_str(), H5P_DEFAULT));
}

std::string root_header_problem(int descriptor) {
  // The superblock is where HDF5 looks for it: at byte 0, then 512, 1024, 2048 and on (files with
  // a user block); addresses count from it. Versions 0 and 1 keep the root's header address in
  // the root's symbol table entry, after four addresses (and in version 1 four more bytes) and the
  // entry's name offset; versions 2 and 3 after three addresses.
  struct stat status {};
  if (::fstat(descriptor, &status) != 0) return "";
  const auto file_size = static_cast<std::uint64_t>(status.st_size);
  constexpr std::uint8_t signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  for (std::uint64_t offset = 0; offset + 16 <= file_size; offset = offset == 0 ? 512 : offset * 2) {
    const HeaderFile probe(descriptor, "", offset, 8, 8);
    std::vector<std::uint8_t> superblock;
    if (!probe.read(0, std::min<std::uint64_t>(96, file_size - offset), superblock)) return "";
    if (std::memcmp(superblock.data(), signature, sizeof signature) != 0) continue;
    const unsigned version = superblock[8];
    const unsigned address_bytes = version < 2 ? superblock[13] : superblock[9];
    const unsigned length_bytes = version < 2 ? superblock[14] : superblock[10];
    if ((address_bytes != 2 && address_bytes != 4 && address_bytes != 8) ||
        (length_bytes != 2 && length_bytes != 4 && length_bytes != 8))
      return "";  // HDF5 refuses the superblock itself
    const std::size_t root_field =
        version < 2 ? (version == 0 ? 24 : 28) + 5 * address_bytes : 12 + 3 * address_bytes;
    if (root_field + address_bytes > superblock.size()) return "";
    const std::uint64_t root =
        Bytes(superblock.data() + root_field, address_bytes).number(address_bytes, "root");
    const HeaderFile file(descriptor, "", offset, address_bytes, length_bytes);
    const std::uint64_t undefined =
        address_bytes == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * address_bytes)) - 1;
    // What else HDF5 reads inside H5Fopen at a size the file states: the driver information
    // block of a version 0 or 1 superblock (a stated 4 GB block was allocated for a file of 1 KB),
    // and the header of a version 2 or 3 superblock's extension (read as the root's is).
    const std::size_t other_field =
        version < 2 ? (version == 0 ? 24 : 28) + 3 * address_bytes : 12 + address_bytes;
    const std::uint64_t other =
        Bytes(superblock.data() + other_field, address_bytes).number(address_bytes, "address");
    if (version < 2 && other != undefined) {
      std::vector<std::uint8_t> block;
      if (!file.read(other, 16, block))
        return "the superblock's driver information block at byte " + std::to_string(file.absolute(other)) +
               " lies past the file's end (" + std::to_string(file_size) + " bytes)";
      const std::uint64_t block_bytes = Bytes(block.data() + 4, 4).number(4, "driver information size");
      if (!file.holds(other, 16 + block_bytes))
        return "the superblock's driver information block at byte " + std::to_string(file.absolute(other)) +
               ": its " + std::to_string(block_bytes) + " bytes run past the file's end (" +
               std::to_string(file_size) + " bytes)";
    }
    std::vector<std::pair<std::string, std::uint64_t>> headers = {{"the root group's object header", root}};
    if (version >= 2 && other != undefined)
      headers.emplace_back("the superblock extension's object header", other);
    for (const auto& [name, address] : headers) {
      try {
        const HeaderMessages header(file, address);
        if (const auto& past = header.chunk_past_end())
          return name + " at byte " + std::to_string(file.absolute(address)) + ": a chunk of " +
                 std::to_string(past->second) + " bytes at byte " +
                 std::to_string(file.absolute(past->first)) + " runs past the file's end (" +
                 std::to_string(file_size) + " bytes)";
      } catch (const Damage& damage) {
        return name + " at byte " + std::to_string(file.absolute(address)) + ": " + damage.what;
      }
    }
    return "";
  }
  return "";
}

}  // namespace phalanx::data::detail
