// RAII ownership of HDF5 identifiers and the few type helpers that the dataset reader and writer
// and the checkpoint and predictions files share. Every hid_t phalanx opens lives in an
// Hdf5Handle, so an exception thrown halfway through
// a read or a write never leaks an open file (which would keep it locked and half-flushed).
#pragma once

#include <hdf5.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace phalanx::data::detail {

class Hdf5Handle {
 public:
  using Closer = herr_t (*)(hid_t);

  Hdf5Handle() = default;
  Hdf5Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Hdf5Handle() { close(); }
  Hdf5Handle(Hdf5Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}
  Hdf5Handle& operator=(Hdf5Handle&& other) noexcept {
    if (this != &other) {
      close();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      closer_ = other.closer_;
    }
    return *this;
  }
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

  // Closes now and says whether HDF5 accepted it: closing a file flushes it, so the writer must
  // see this result before it renames the file into place.
  bool close() {
    if (!valid()) return true;
    const herr_t status = closer_(id_);
    id_ = H5I_INVALID_HID;
    return status >= 0;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

inline Hdf5Handle file_handle(hid_t id) {
  return {id, H5Fclose};
}
inline Hdf5Handle group_handle(hid_t id) {
  return {id, H5Gclose};
}
inline Hdf5Handle dataset_handle(hid_t id) {
  return {id, H5Dclose};
}
inline Hdf5Handle dataspace_handle(hid_t id) {
  return {id, H5Sclose};
}
inline Hdf5Handle datatype_handle(hid_t id) {
  return {id, H5Tclose};
}
inline Hdf5Handle attribute_handle(hid_t id) {
  return {id, H5Aclose};
}
inline Hdf5Handle property_list_handle(hid_t id) {
  return {id, H5Pclose};
}

// HDF5 prints its whole error stack to stderr by default; we turn failures into one message that
// names the file and dataset instead. The setting is per thread in thread-safe builds, so every
// entry point calls this rather than relying on a one-time initialisation.
inline void silence_hdf5_error_printing() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

// The operating system's reason for the HDF5 call that just failed, as HDF5's file driver recorded
// it on the error stack ("No space left on device", "Input/output error"); empty when the failure
// was not a system call's. Call it right after the failed call: the next HDF5 call clears the stack.
inline std::string hdf5_system_reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* entry, void* found) -> herr_t {
        const std::string text = entry->desc ? entry->desc : "";
        const std::string marker = "error message = '";
        const auto begin = text.find(marker);
        if (begin == std::string::npos) return 0;
        const auto end = text.find('\'', begin + marker.size());
        if (end == std::string::npos) return 0;
        *static_cast<std::string*>(found) = text.substr(begin + marker.size(), end - begin - marker.size());
        return 1;  // the innermost system call is the one to name
      },
      &reason);
  return reason;
}

// The description HDF5 gave where the failure of the call that just failed was first detected
// ("data error detected by Fletcher32 checksum"); empty when there is none.
inline std::string hdf5_innermost_error() {
  std::string innermost;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* entry, void* found) -> herr_t {
        if (entry->desc && entry->desc[0]) {
          *static_cast<std::string*>(found) = entry->desc;
          return 1;
        }
        return 0;
      },
      &innermost);
  return innermost;
}

// Why the HDF5 call that just failed failed, for its message: HDF5's innermost reason, else "file
// truncated or corrupt". (A failed read_checked(): read_failure_reason(), which also names a
// filter that refused a chunk.)
inline std::string hdf5_failure_reason() {
  const std::string innermost = hdf5_innermost_error();
  return innermost.empty() ? "file truncated or corrupt" : innermost;
}

// A variable-length UTF-8 string type: what h5py writes for `str` and reads back as `str`.
inline Hdf5Handle variable_string_type() {
  Hdf5Handle type = datatype_handle(H5Tcopy(H5T_C_S1));
  if (type.valid()) {
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
  }
  return type;
}

// The memory type to read variable-length strings stored as `stored` into: HDF5 converts no
// string between character sets, and h5py writes UTF-8 where other tools write ASCII.
inline Hdf5Handle variable_string_type_for(hid_t stored) {
  Hdf5Handle type = variable_string_type();
  if (type.valid()) H5Tset_cset(type.get(), H5Tget_cset(stored));
  return type;
}

// The strings of a fixed-length string read (`count` slots of `length` bytes, as numpy's `S`
// dtype writes them): each ends at its first NUL, and a space-padded type loses its padding.
inline std::vector<std::string> split_fixed_length_strings(const std::vector<char>& buffer, std::size_t count,
                                                           std::size_t length, bool space_padded) {
  std::vector<std::string> values;
  values.reserve(count);
  for (std::size_t index = 0; index < count; ++index) {
    std::string value(buffer.data() + index * length, length);
    value.resize(std::min(value.find('\0'), value.size()));
    if (space_padded) value.erase(value.find_last_not_of(' ') + 1);
    values.push_back(std::move(value));
  }
  return values;
}

// numpy-style name of an HDF5 datatype, for "expected uint8, got float32" messages.
inline std::string describe_type(hid_t type) {
  const std::string bits = std::to_string(8 * H5Tget_size(type));
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + bits;
    case H5T_FLOAT: return "float" + bits;
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_REFERENCE: return "reference";
    case H5T_VLEN: return "variable-length sequence";
    case H5T_ARRAY: return "array";
    case H5T_TIME: return "time";
    default: return "unknown type";
  }
}

inline bool is_integer_type(hid_t type, std::size_t bytes, H5T_sign_t sign) {
  return H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) == bytes && H5Tget_sign(type) == sign;
}

// True when `name` (one path component) is a link in `location`; a broken or missing link is false.
inline bool link_exists(hid_t location, const char* name) {
  return H5Lexists(location, name, H5P_DEFAULT) > 0;
}

}  // namespace phalanx::data::detail
