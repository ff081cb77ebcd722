// Checkpoint writing and reading with the HDF5 C API. Weights are copied to host memory and
// stored per parameter under /model/<layer>/<param>, optimizer state under
// /optimizer/<layer>/<param>/<state>, position under /state, so h5py + torch can read them. The
// file's first 512 bytes (an HDF5 user block) hold its seal (checkpoint_seal.hpp).
#include "phalanx/train/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "phalanx/config/config.hpp"
#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/usable_memory.hpp"
#include "phalanx/data/checked_chunk_decoding.hpp"
#include "phalanx/data/checked_file_driver.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/dataset_storage_check.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "phalanx/data/hdf5_lock.hpp"
#include "phalanx/data/hdf5_objects.hpp"
#include "phalanx/data/object_header_check.hpp"
#include "phalanx/train/checkpoint_seal.hpp"

namespace phalanx::train {

using data::detail::Hdf5Handle;
namespace {

constexpr int checkpoint_version = 1;

void silence_hdf5() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

// Opens a checkpoint read-only through the checked file driver, as every user file is read: a
// checkpoint's strings may be variable-length (h5py writes them so when a user edits one), and
// HDF5 1.10 would loop forever over a damaged global heap collection holding them
// (docs/HARDENING.md). Writes stay on HDF5's core driver (write_checkpoint).
Hdf5Handle open_checkpoint(const std::string& path) {
  const Hdf5Handle access = data::detail::checked_file_access();
  return data::detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
}

void require_write(bool ok, const std::string& path, const std::string& what) {
  if (ok) return;
  // A full disk or a failing file system is the machine's, not phalanx's: say which, and that the
  // earlier checkpoints are untouched (this one was going to a temporary name).
  std::string reason = data::detail::hdf5_system_reason();
  if (!reason.empty()) {
    reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
    throw_run_failure("checkpoint " + path + ": " + reason + " (writing " + what +
                      " failed; the checkpoints written before it are kept)");
  }
  throw_internal_error("checkpoint " + path + ": writing " + what + " failed", __FILE__, __LINE__);
}

// Writes a checkpoint's bytes to its temporary name: its seal (the user block), then the HDF5
// image. A full disk (or another failed write) names the checkpoint and the system's reason; the
// temporary file goes with the AtomicFile.
void write_bytes(const std::string& temporary_path, const std::string& path, const std::string& seal,
                 const std::vector<char>& image) {
  const int descriptor = ::open(temporary_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const auto fail = [&](int error) {
    std::string reason = std::strerror(error);
    reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
    throw_run_failure("checkpoint " + path + ": " + reason + " (writing " + temporary_path +
                      " failed; the checkpoints written before it are kept)");
  };
  if (descriptor < 0) fail(errno);
  for (const auto& [bytes, size] :
       {std::pair{seal.data(), seal.size()}, std::pair{image.data(), image.size()}}) {
    std::size_t written = 0;
    while (written < size) {
      const ssize_t result = ::write(descriptor, bytes + written, size - written);
      if (result < 0 && errno == EINTR) continue;
      if (result <= 0) {
        const int error = result < 0 ? errno : ENOSPC;  // a write of nothing: the device took no more
        ::close(descriptor);
        fail(error);
      }
      written += static_cast<std::size_t>(result);
    }
  }
  // close() reports errors of delayed writes on some file systems (NFS): those count too.
  if (::close(descriptor) != 0) fail(errno);
}

// Dataset creation properties without modification times: two identical runs then write
// byte-identical checkpoints, which `cmp` or a checksum can confirm.
Hdf5Handle untimed() {
  Hdf5Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_obj_track_times(properties.get(), 0);
  return properties;
}

// Creates every group on the way to `name` (like mkdir -p), each without modification times.
void ensure_parent_groups(hid_t file, const std::string& name) {
  Hdf5Handle properties(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  H5Pset_obj_track_times(properties.get(), 0);
  for (auto slash = name.find('/', 1); slash != std::string::npos; slash = name.find('/', slash + 1)) {
    const std::string group = name.substr(0, slash);
    if (H5Lexists(file, group.c_str(), H5P_DEFAULT) > 0) continue;
    Hdf5Handle created(H5Gcreate2(file, group.c_str(), H5P_DEFAULT, properties.get(), H5P_DEFAULT), H5Gclose);
    if (!created.valid())
      throw_internal_error("creating HDF5 group " + group + " failed", __FILE__, __LINE__);
  }
}

void write_attribute_string(hid_t object, const char* name, const std::string& value,
                            const std::string& path);

// The "xxh64:<hex>" checksum of float values as little-endian bytes, the dataset files' rule
// (data/dataset.hpp): damage inside a weight's bytes leaves HDF5's own structure intact, so without
// it a damaged checkpoint would load as wrong weights instead of being refused.
std::string float_checksum(const float* values, std::size_t count) {
  if constexpr (std::endian::native == std::endian::little)
    return data::checksum_text(values, count * sizeof(float));
  std::vector<std::uint32_t> little_endian(count);
  for (std::size_t index = 0; index < count; ++index)
    little_endian[index] = __builtin_bswap32(std::bit_cast<std::uint32_t>(values[index]));
  return data::checksum_text(little_endian.data(), count * sizeof(std::uint32_t));
}

void write_floats(hid_t file, const std::string& name, const Shape& shape, const float* values,
                  const std::string& path) {
  ensure_parent_groups(file, name);
  std::vector<hsize_t> dims(shape.dims().begin(), shape.dims().end());
  Hdf5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Hdf5Handle dataset(
      H5Dcreate2(file, name.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, untimed().get(), H5P_DEFAULT),
      H5Dclose);
  require_write(dataset.valid(), path, name);
  require_write(H5Dwrite(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0, path,
                name);
  write_attribute_string(dataset.get(), data::checksum_attribute,
                         float_checksum(values, static_cast<std::size_t>(shape.elements())), path);
}

// A scalar dataset: stored as `file_type`, written from `value` in `memory_type`.
void write_scalar(hid_t file, const std::string& name, hid_t file_type, hid_t memory_type, const void* value,
                  const std::string& path) {
  ensure_parent_groups(file, name);
  Hdf5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Hdf5Handle dataset(
      H5Dcreate2(file, name.c_str(), file_type, space.get(), H5P_DEFAULT, untimed().get(), H5P_DEFAULT),
      H5Dclose);
  require_write(
      dataset.valid() && H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, value) >= 0,
      path, name);
}

void write_int64(hid_t file, const std::string& name, std::int64_t value, const std::string& path) {
  write_scalar(file, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, path);
}

// A 1-D int64 attribute (the batch split: one local batch per rank).
void write_attribute_int64_list(hid_t object, const char* name, const std::vector<int>& values,
                                const std::string& path) {
  const std::vector<std::int64_t> wide(values.begin(), values.end());
  const hsize_t count = wide.size();
  Hdf5Handle space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  Hdf5Handle attribute(H5Acreate2(object, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                       H5Aclose);
  require_write(attribute.valid() && H5Awrite(attribute.get(), H5T_NATIVE_INT64, wide.data()) >= 0, path,
                name);
}

void write_attribute_int64(hid_t object, const char* name, std::int64_t value, const std::string& path) {
  Hdf5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Hdf5Handle attribute(H5Acreate2(object, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                       H5Aclose);
  require_write(attribute.valid() && H5Awrite(attribute.get(), H5T_NATIVE_INT64, &value) >= 0, path, name);
}

void write_attribute_string(hid_t object, const char* name, const std::string& value,
                            const std::string& path) {
  Hdf5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<std::size_t>(value.size(), 1));
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  Hdf5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Hdf5Handle attribute(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  require_write(attribute.valid() && H5Awrite(attribute.get(), type.get(), padded.data()) >= 0, path, name);
}

void write_attribute_double(hid_t object, const char* name, double value, const std::string& path) {
  Hdf5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Hdf5Handle attribute(H5Acreate2(object, name, H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                       H5Aclose);
  require_write(attribute.valid() && H5Awrite(attribute.get(), H5T_NATIVE_DOUBLE, &value) >= 0, path, name);
}

// Refuses a dataspace that does not hold exactly one value. The readers of one value read into
// one variable, and HDF5 writes as many values as the file declares: a damaged file declaring
// more would overrun it, so each reader checks first. `subject` is what the message names before
// "must hold one value", with its own punctuation ("checkpoint attribute 'step'", "/state/epoch:").
void require_one_value(hid_t space, const std::string& path, const std::string& subject) {
  const hssize_t count = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
  PHALANX_REQUIRE_INPUT(
      count == 1, path, ": ", subject, " must hold one value, ",
      count < 0 ? std::string("its dataspace is unreadable") : "it holds " + std::to_string(count));
}

// Refuses a stored type that is not a number of at most 16 bytes (long double). HDF5 converts
// every value read through a buffer sized by the stored type, so a damaged type size (4 GB for
// one counter) would be allocated as the file states it; and only numbers convert to the
// counters, sums and weights a checkpoint holds.
void require_number_type(hid_t type, const std::string& path, const std::string& place) {
  constexpr std::size_t largest_number_bytes = 16;
  PHALANX_REQUIRE_INPUT(type >= 0, path, ": ", place, " is unreadable (its type cannot be read)");
  const H5T_class_t type_class = H5Tget_class(type);
  const bool number = type_class == H5T_INTEGER || type_class == H5T_FLOAT;
  PHALANX_REQUIRE_INPUT(
      number && H5Tget_size(type) <= largest_number_bytes, path, ": ", place, " is stored as ",
      number
          ? std::to_string(H5Tget_size(type)) + "-byte " + (type_class == H5T_INTEGER ? "integers" : "floats")
          : data::detail::describe_type(type),
      ", not as numbers of up to ", largest_number_bytes, " bytes");
}

void require_number_attribute(hid_t attribute, const char* name, const std::string& path) {
  const Hdf5Handle type(H5Aget_type(attribute), H5Tclose);
  require_number_type(type.get(), path, std::string("checkpoint attribute '") + name + "'");
}

void require_number_dataset(hid_t dataset, const std::string& name, const std::string& path) {
  const Hdf5Handle type(H5Dget_type(dataset), H5Tclose);
  require_number_type(type.get(), path, name);
}

// Opens an attribute of `object` that must hold exactly one value.
Hdf5Handle open_single_value_attribute(hid_t object, const char* name, const std::string& path) {
  Hdf5Handle attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  PHALANX_REQUIRE_INPUT(attribute.valid(), path, ": checkpoint attribute '", name, "' is unreadable");
  const Hdf5Handle space(H5Aget_space(attribute.get()), H5Sclose);
  require_one_value(space.get(), path, std::string("checkpoint attribute '") + name + "'");
  return attribute;
}

double read_attribute_double(hid_t object, const char* name, const std::string& path) {
  const Hdf5Handle attribute = open_single_value_attribute(object, name, path);
  require_number_attribute(attribute.get(), name, path);
  double value = 0;
  PHALANX_REQUIRE_INPUT(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value) >= 0, path,
                        ": checkpoint attribute '", name, "' is unreadable");
  return value;
}

std::int64_t read_attribute_int64(hid_t object, const char* name, const std::string& path) {
  PHALANX_REQUIRE_INPUT(H5Aexists(object, name) > 0, path, ": checkpoint attribute '", name, "' is missing");
  const Hdf5Handle attribute = open_single_value_attribute(object, name, path);
  require_number_attribute(attribute.get(), name, path);
  std::int64_t value = 0;
  PHALANX_REQUIRE_INPUT(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value) >= 0, path,
                        ": checkpoint attribute '", name, "' is unreadable");
  return value;
}

std::string read_attribute_string(hid_t object, const char* name, const std::string& path) {
  PHALANX_REQUIRE_INPUT(H5Aexists(object, name) > 0, path, ": checkpoint attribute '", name, "' is missing");
  const Hdf5Handle attribute = open_single_value_attribute(object, name, path);
  Hdf5Handle type(H5Aget_type(attribute.get()), H5Tclose);
  PHALANX_REQUIRE_INPUT(H5Tget_class(type.get()) == H5T_STRING, path, ": checkpoint attribute '", name,
                        "' is not a string");
  std::string value;
  if (H5Tis_variable_str(type.get()) > 0) {
    char* text = nullptr;
    const Hdf5Handle memory_type = data::detail::variable_string_type_for(type.get());
    // The string lives in a global heap collection, which the checked driver refuses if damaged.
    PHALANX_REQUIRE_INPUT(H5Aread(attribute.get(), memory_type.get(), &text) >= 0,
                          data::detail::unreadable_message(path + ": attribute '" + name + "'",
                                                           data::detail::checked_file_refusal()));
    value = text ? text : "";
    H5free_memory(text);
  } else {
    std::vector<char> buffer(H5Tget_size(type.get()) + 1, '\0');
    PHALANX_REQUIRE_INPUT(H5Aread(attribute.get(), type.get(), buffer.data()) >= 0, path, ": attribute '",
                          name, "' is unreadable");
    value = buffer.data();
  }
  return value;
}

std::int64_t read_int64(hid_t file, const std::string& name, const std::string& path) {
  PHALANX_REQUIRE_INPUT(H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0, path, ": ", name, ": missing");
  Hdf5Handle dataset = data::detail::open_checked_dataset(file, name, path);
  PHALANX_REQUIRE_INPUT(dataset.valid(), path, ": ", name, ": unreadable");
  const Hdf5Handle space(H5Dget_space(dataset.get()), H5Sclose);
  require_one_value(space.get(), path, name + ":");
  require_number_dataset(dataset.get(), name, path);
  std::int64_t value = 0;
  data::detail::require_sound_dataset_storage(dataset.get(), path + ": " + name);
  PHALANX_REQUIRE_INPUT(
      data::detail::read_checked(dataset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value) >= 0,
      path, ": ", name, ": unreadable");
  return value;
}

// The batch split attribute: `expected` positive ints (one per rank).
std::vector<int> read_attribute_local_batches(hid_t object, const char* name, std::size_t expected,
                                              const std::string& path) {
  Hdf5Handle attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  PHALANX_REQUIRE_INPUT(attribute.valid(), path, ": checkpoint attribute '", name, "' is unreadable");
  Hdf5Handle space(H5Aget_space(attribute.get()), H5Sclose);
  hsize_t count = 0;
  PHALANX_REQUIRE_INPUT(H5Sget_simple_extent_ndims(space.get()) == 1 &&
                            H5Sget_simple_extent_dims(space.get(), &count, nullptr) == 1 && count == expected,
                        path, ": checkpoint attribute '", name, "' must hold ", expected,
                        " local batch sizes (one per rank)");
  require_number_attribute(attribute.get(), name, path);
  std::vector<std::int64_t> wide(expected);
  PHALANX_REQUIRE_INPUT(H5Aread(attribute.get(), H5T_NATIVE_INT64, wide.data()) >= 0, path,
                        ": checkpoint attribute '", name, "' is unreadable");
  for (const std::int64_t value : wide)
    PHALANX_REQUIRE_INPUT(value >= 1 && value <= std::numeric_limits<int>::max(), path,
                          ": checkpoint attribute '", name, "': local batch ", value, " is out of range");
  return std::vector<int>(wide.begin(), wide.end());
}

bool link_exists(hid_t file, const std::string& name, const std::string& path) {
  // H5Lexists checks one level; walk the path so a missing group is "missing", not an error, and
  // check each group's header before HDF5 looks a name up in it.
  std::size_t position = 0;
  while ((position = name.find('/', position + 1)) != std::string::npos) {
    const std::string group = name.substr(0, position);
    if (H5Lexists(file, group.c_str(), H5P_DEFAULT) <= 0) return false;
    data::detail::check_object_header(file, group, path);
  }
  return H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0;
}

void read_float_values(hid_t dataset, const std::string& name, const Shape& shape, float* values,
                       const std::string& path);

// The stored shape of an open dataset.
Shape dataset_shape(hid_t dataset) {
  Hdf5Handle space(H5Dget_space(dataset), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return Shape(std::vector<std::int64_t>(dims.begin(), dims.end()));
}

void read_floats(hid_t file, const std::string& name, const Shape& shape, float* values,
                 const std::string& path) {
  PHALANX_REQUIRE_INPUT(link_exists(file, name, path), path, ": ", name,
                        ": missing (the checkpoint is not of this model)");
  Hdf5Handle dataset = data::detail::open_checked_dataset(file, name, path);
  PHALANX_REQUIRE_INPUT(dataset.valid(), path, ": ", name, ": unreadable");
  const Shape found = dataset_shape(dataset.get());
  PHALANX_REQUIRE_INPUT(found == shape, path, ": ", name, ": shape ", found.to_string(),
                        " does not match the model's ", shape.to_string());
  read_float_values(dataset.get(), name, shape, values, path);
}

// The values of an open float dataset of `shape`, checked against its stored checksum.
void read_float_values(hid_t dataset, const std::string& name, const Shape& shape, float* values,
                       const std::string& path) {
  require_number_dataset(dataset, name, path);
  data::detail::require_sound_dataset_storage(dataset, path + ": " + name);
  PHALANX_REQUIRE_INPUT(
      data::detail::read_checked(dataset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0, path,
      ": ", name, ": unreadable (truncated file?)");
  // Checkpoints written before checksums were stored have none; those load unverified.
  if (H5Aexists(dataset, data::checksum_attribute) <= 0) return;
  const std::string stored = read_attribute_string(dataset, data::checksum_attribute, path);
  const std::string computed = float_checksum(values, static_cast<std::size_t>(shape.elements()));
  PHALANX_REQUIRE_INPUT(
      stored == computed, path, ": ", name, ": checksum mismatch (stored ", stored, ", computed ", computed,
      "): the checkpoint file is damaged (after an edit on purpose, e.g. with h5py, delete the "
      "edited datasets' 'checksum' attributes, then run `phalanx checkpoint seal ",
      path, "`)");
}

// A loss sum's float64 values get the same "xxh64:<hex>" checksum rule as the float32 datasets.
std::string double_checksum(const double* values, std::size_t count) {
  if constexpr (std::endian::native == std::endian::little)
    return data::checksum_text(values, count * sizeof(double));
  std::vector<std::uint64_t> little_endian(count);
  for (std::size_t index = 0; index < count; ++index)
    little_endian[index] = __builtin_bswap64(std::bit_cast<std::uint64_t>(values[index]));
  return data::checksum_text(little_endian.data(), count * sizeof(std::uint64_t));
}

// A 1-D dataset with one value per rank (the running loss totals).
template <typename Value>
void write_per_rank(hid_t file, const std::string& name, const std::vector<Value>& values,
                    const std::string& path) {
  ensure_parent_groups(file, name);
  const hsize_t count = values.size();
  Hdf5Handle space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  const hid_t file_type = std::is_same_v<Value, double> ? H5T_IEEE_F64LE : H5T_STD_I64LE;
  const hid_t memory_type = std::is_same_v<Value, double> ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
  Hdf5Handle dataset(
      H5Dcreate2(file, name.c_str(), file_type, space.get(), H5P_DEFAULT, untimed().get(), H5P_DEFAULT),
      H5Dclose);
  require_write(dataset.valid() &&
                    H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0,
                path, name);
  if constexpr (std::is_same_v<Value, double>)
    write_attribute_string(dataset.get(), data::checksum_attribute,
                           double_checksum(values.data(), values.size()), path);
}

template <typename Value>
std::vector<Value> read_per_rank(hid_t file, const std::string& name, std::size_t ranks,
                                 const std::string& path) {
  PHALANX_REQUIRE_INPUT(H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0, path, ": ", name,
                        ": missing (the checkpoint holds some of the running loss totals but not all)");
  Hdf5Handle dataset = data::detail::open_checked_dataset(file, name, path);
  PHALANX_REQUIRE_INPUT(dataset.valid(), path, ": ", name, ": unreadable");
  Hdf5Handle space(H5Dget_space(dataset.get()), H5Sclose);
  hsize_t count = 0;
  PHALANX_REQUIRE_INPUT(H5Sget_simple_extent_ndims(space.get()) == 1 &&
                            H5Sget_simple_extent_dims(space.get(), &count, nullptr) == 1 && count == ranks,
                        path, ": ", name, " must hold ", ranks, " values (one per rank)");
  require_number_dataset(dataset.get(), name, path);
  std::vector<Value> values(ranks);
  data::detail::require_sound_dataset_storage(dataset.get(), path + ": " + name);
  const hid_t memory_type = std::is_same_v<Value, double> ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
  PHALANX_REQUIRE_INPUT(data::detail::read_checked(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                                   values.data()) >= 0,
                        path, ": ", name, ": unreadable (truncated file?)");
  if constexpr (std::is_same_v<Value, double>) {
    if (H5Aexists(dataset.get(), data::checksum_attribute) > 0) {
      const std::string stored = read_attribute_string(dataset.get(), data::checksum_attribute, path);
      const std::string computed = double_checksum(values.data(), values.size());
      PHALANX_REQUIRE_INPUT(stored == computed, path, ": ", name, ": checksum mismatch (stored ", stored,
                            ", computed ", computed, "): the checkpoint file is damaged");
    }
  }
  return values;
}

// Every rank's running loss totals, or none in a checkpoint written before they were stored.
void write_running_totals(hid_t file, const std::vector<RunningTotals>& totals, const std::string& path) {
  std::vector<double> epoch_loss_sums, interval_loss_sums;
  std::vector<std::int64_t> epoch_samples, interval_correct, interval_samples;
  for (const RunningTotals& rank : totals) {
    epoch_loss_sums.push_back(rank.epoch_loss_sum);
    epoch_samples.push_back(rank.epoch_samples);
    interval_loss_sums.push_back(rank.interval_loss_sum);
    interval_correct.push_back(rank.interval_correct);
    interval_samples.push_back(rank.interval_samples);
  }
  write_per_rank(file, "/state/epoch_loss_sum", epoch_loss_sums, path);
  write_per_rank(file, "/state/epoch_samples", epoch_samples, path);
  write_per_rank(file, "/state/interval_loss_sum", interval_loss_sums, path);
  write_per_rank(file, "/state/interval_correct", interval_correct, path);
  write_per_rank(file, "/state/interval_samples", interval_samples, path);
}

std::vector<RunningTotals> read_running_totals(hid_t file, std::size_t ranks, const std::string& path) {
  if (!link_exists(file, "/state/epoch_loss_sum", path)) return {};
  const auto epoch_loss_sums = read_per_rank<double>(file, "/state/epoch_loss_sum", ranks, path);
  const auto epoch_samples = read_per_rank<std::int64_t>(file, "/state/epoch_samples", ranks, path);
  const auto interval_loss_sums = read_per_rank<double>(file, "/state/interval_loss_sum", ranks, path);
  const auto interval_correct = read_per_rank<std::int64_t>(file, "/state/interval_correct", ranks, path);
  const auto interval_samples = read_per_rank<std::int64_t>(file, "/state/interval_samples", ranks, path);
  std::vector<RunningTotals> totals(ranks);
  for (std::size_t rank = 0; rank < ranks; ++rank) {
    PHALANX_REQUIRE_INPUT(epoch_samples[rank] >= 0 && interval_samples[rank] >= 0, path,
                          ": /state/epoch_samples and /state/interval_samples must not be negative (rank ",
                          rank, ")");
    PHALANX_REQUIRE_INPUT(interval_correct[rank] >= 0 && interval_correct[rank] <= interval_samples[rank],
                          path, ": /state/interval_correct of rank ", rank, " is ", interval_correct[rank],
                          ", outside [0, /state/interval_samples = ", interval_samples[rank], "]");
    totals[rank] = {epoch_loss_sums[rank], epoch_samples[rank], interval_loss_sums[rank],
                    interval_correct[rank], interval_samples[rank]};
  }
  return totals;
}

std::vector<float> to_host(backend::Backend& backend, const Tensor& tensor, std::int64_t count) {
  std::vector<float> host(static_cast<std::size_t>(count));
  if (count) backend.copy_to_host(host.data(), tensor.data(), host.size() * sizeof(float));
  return host;
}

void write_double(hid_t file, const std::string& name, double value, const std::string& path) {
  write_scalar(file, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, path);
}

double read_double(hid_t file, const std::string& name, const std::string& path) {
  PHALANX_REQUIRE_INPUT(H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0, path, ": ", name, ": missing");
  Hdf5Handle dataset = data::detail::open_checked_dataset(file, name, path);
  PHALANX_REQUIRE_INPUT(dataset.valid(), path, ": ", name, ": unreadable");
  const Hdf5Handle space(H5Dget_space(dataset.get()), H5Sclose);
  require_one_value(space.get(), path, name + ":");
  require_number_dataset(dataset.get(), name, path);
  double value = 0;
  data::detail::require_sound_dataset_storage(dataset.get(), path + ": " + name);
  PHALANX_REQUIRE_INPUT(data::detail::read_checked(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL,
                                                   H5P_DEFAULT, &value) >= 0,
                        path, ": ", name, ": unreadable");
  return value;
}

// The weight average beside /model: the same names, shapes and checksums under /ema.
void write_average(hid_t file, const nn::ParameterRegistry& registry, const WeightAverageState& average,
                   const std::string& path) {
  PHALANX_CHECK(average.parameters.size() == static_cast<std::size_t>(registry.parameter_count()) &&
                    average.buffers.size() == static_cast<std::size_t>(registry.buffer_count()),
                "a weight average of ", average.parameters.size(), " + ", average.buffers.size(),
                " values for ", registry.parameter_count(), " + ", registry.buffer_count());
  for (const auto& info : registry.parameters_info())
    write_floats(file, "/ema/" + info.name, info.shape, average.parameters.data() + info.offset, path);
  for (const auto& info : registry.buffers_info())
    write_floats(file, "/ema/" + info.name, info.shape, average.buffers.data() + info.offset, path);
  write_int64(file, "/state/ema_updates", average.updates, path);
}

// A watch is written once it has seen an evaluation; its metric is an attribute of `best`.
void write_metric_watch(hid_t file, const std::string& group, const MetricWatchState& state,
                        const std::string& path) {
  // A watch whose evaluations so far were all NaN has no best, but its count runs (MetricWatch::
  // observe): it is kept, best NaN at epoch 0, or a resume would start its patience again.
  if (!state.evaluated && state.evaluations_since_best == 0) return;
  write_double(file, group + "/best", state.evaluated ? state.best : std::nan(""), path);
  Hdf5Handle best(H5Dopen2(file, (group + "/best").c_str(), H5P_DEFAULT), H5Dclose);
  require_write(best.valid(), path, group + "/best");
  write_attribute_string(best.get(), "metric", state.metric, path);
  write_int64(file, group + "/best_epoch", state.evaluated ? state.best_epoch : 0, path);
  write_int64(file, group + "/evaluations_since_best", state.evaluations_since_best, path);
}

std::optional<MetricWatchState> read_metric_watch(hid_t file, const std::string& group,
                                                  const std::string& path) {
  if (!link_exists(file, group + "/best", path)) return std::nullopt;
  MetricWatchState state;
  state.best = read_double(file, group + "/best", path);
  Hdf5Handle best = data::detail::open_checked_dataset(file, group + "/best", path);
  PHALANX_REQUIRE_INPUT(best.valid(), path, ": ", group, "/best: unreadable");
  state.metric = read_attribute_string(best.get(), "metric", path);
  state.best_epoch = read_int64(file, group + "/best_epoch", path);
  state.evaluations_since_best = read_int64(file, group + "/evaluations_since_best", path);
  // Epoch 0: evaluations so far, none of them a number (no best yet).
  const bool evaluated = state.best_epoch >= 1 && !std::isnan(state.best);
  const bool unevaluated =
      state.best_epoch == 0 && std::isnan(state.best) && state.evaluations_since_best > 0;
  PHALANX_REQUIRE_INPUT((evaluated || unevaluated) && state.evaluations_since_best >= 0, path, ": ", group,
                        ": best ", state.best, " at epoch ", state.best_epoch, " and evaluations_since_best ",
                        state.evaluations_since_best, " do not describe evaluations");
  state.evaluated = evaluated;
  if (!evaluated) state.best = 0;  // as a watch that has not evaluated holds it
  return state;
}

}  // namespace

void write_checkpoint(const std::string& path, backend::Backend& backend, nn::ParameterRegistry& registry,
                      optim::Optimizer* optimizer, const TrainingPosition& position, int world_size,
                      std::uint64_t seed, const std::string& config_text,
                      const optim::LossScalerState* loss_scale, const std::vector<int>& local_batches,
                      const std::vector<RunningTotals>& running_totals, double learning_rate,
                      std::int64_t nonfinite_skipped_steps, const CheckpointExtras& extras) {
  PHALANX_CHECK(running_totals.empty() || running_totals.size() == static_cast<std::size_t>(world_size),
                running_totals.size(), " running loss totals for ", world_size, " ranks");
  const auto hdf5_lock = data::lock_hdf5();
  silence_hdf5();
  backend.synchronize();
  AtomicFile output(path);
  {
    // HDF5 builds the file in memory (the core driver, no backing store) and phalanx writes its
    // bytes: a full disk or a failing file system then fails a write() of ours, with its errno,
    // instead of HDF5's close, which leaves a half-closed file that crashes HDF5 at exit.
    Hdf5Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    require_write(access.valid() && H5Pset_fapl_core(access.get(), 1 << 20, false) >= 0, path, "the file");
    // The user block reserves the file's first bytes for the seal (checkpoint_seal.hpp): HDF5
    // starts at byte 512, and every HDF5 reader (h5py included) skips the block.
    Hdf5Handle creation(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
    require_write(creation.valid() && H5Pset_userblock(creation.get(), checkpoint_seal_bytes) >= 0, path,
                  "the file");
    Hdf5Handle file(H5Fcreate(output.temporary_path().c_str(), H5F_ACC_TRUNC, creation.get(), access.get()),
                    H5Fclose);
    require_write(file.valid(), path, "the file");
    Hdf5Handle root(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose);
    write_attribute_string(root.get(), "format", "phalanx-checkpoint", path);
    write_attribute_int64(root.get(), "version", checkpoint_version, path);
    write_attribute_int64(root.get(), "step", position.global_step, path);
    write_attribute_int64(root.get(), "epoch", position.epoch, path);
    write_attribute_int64(root.get(), "samples_seen", position.samples_seen, path);
    write_attribute_int64(root.get(), "world_size", world_size, path);
    // The batch split: a resumed run continues with it rather than measuring again.
    if (!local_batches.empty()) write_attribute_int64_list(root.get(), "local_batches", local_batches, path);
    // The global batch fixes the trajectory (data order, gradient weights, schedule); the world
    // size and the split only say how it was cut, so a resume on other ranks keeps this number.
    if (!local_batches.empty())
      write_attribute_int64(root.get(), "global_batch",
                            std::accumulate(local_batches.begin(), local_batches.end(), std::int64_t{0}),
                            path);
    // The rate the schedule scales, when an elastic resume with another global batch rescaled
    // the config's optimizer.learning_rate (elastic.learning_rate_rule); later resumes keep it.
    if (learning_rate > 0) write_attribute_double(root.get(), "learning_rate", learning_rate, path);
    write_attribute_string(root.get(), "config", config_text, path);
    // The order the epoch's samples were taken in: `data.cache: auto` chooses it on each node, so
    // the config's text alone does not say whether a resume mid-epoch continues the same order.
    if (!extras.data_order.empty()) write_attribute_string(root.get(), "data_order", extras.data_order, path);
    if (extras.train_samples > 0)
      write_attribute_int64(root.get(), "train_samples", extras.train_samples, path);
    write_attribute_string(root.get(), "optimizer", optimizer ? optimizer->type() : "", path);

    const auto parameters = to_host(backend, registry.parameters(), registry.parameter_count());
    for (const auto& info : registry.parameters_info())
      write_floats(file.get(), "/model/" + info.name, info.shape, parameters.data() + info.offset, path);
    const auto buffers = to_host(backend, registry.buffers(), registry.buffer_count());
    const std::string running_mean = "/running_mean";
    for (const auto& info : registry.buffers_info()) {
      write_floats(file.get(), "/model/" + info.name, info.shape, buffers.data() + info.offset, path);
      // torch's BatchNorm state_dict also holds num_batches_tracked; without it a strict
      // load_state_dict fails. Every training step is one batch for every BN layer.
      if (info.name.ends_with(running_mean))
        write_int64(
            file.get(),
            "/model/" + info.name.substr(0, info.name.size() - running_mean.size()) + "/num_batches_tracked",
            position.global_step, path);
    }
    if (optimizer) {
      for (const auto& state_name : optimizer->state_names()) {
        const auto state = to_host(backend, optimizer->state(state_name), registry.parameter_count());
        for (const auto& info : registry.parameters_info())
          write_floats(file.get(), "/optimizer/" + info.name + "/" + state_name, info.shape,
                       state.data() + info.offset, path);
      }
    }
    write_int64(file.get(), "/state/global_step", position.global_step, path);
    write_int64(file.get(), "/state/epoch", position.epoch, path);
    write_int64(file.get(), "/state/step_in_epoch", position.step_in_epoch, path);
    write_int64(file.get(), "/state/samples_seen", position.samples_seen, path);
    // Randomness is counter-based on (seed, step): the seed is the whole RNG state.
    write_int64(file.get(), "/state/rng_seed", static_cast<std::int64_t>(seed), path);
    if (!running_totals.empty()) write_running_totals(file.get(), running_totals, path);
    if (loss_scale) {
      // Scales are powers of two: the exponent is the exact value.
      write_int64(file.get(), "/state/loss_scale_log2", std::ilogb(loss_scale->scale), path);
      write_int64(file.get(), "/state/loss_scale_good_steps", loss_scale->good_steps, path);
      write_int64(file.get(), "/state/loss_scale_skipped_steps", loss_scale->skipped_steps, path);
    }
    if (nonfinite_skipped_steps > 0)
      write_int64(file.get(), "/state/nonfinite_skipped_steps", nonfinite_skipped_steps, path);
    if (extras.average) write_average(file.get(), registry, *extras.average, path);
    if (extras.early_stop) write_metric_watch(file.get(), "/state/early_stop", *extras.early_stop, path);
    if (extras.keep_best) write_metric_watch(file.get(), "/state/keep_best", *extras.keep_best, path);
    root = Hdf5Handle();
    require_write(H5Fflush(file.get(), H5F_SCOPE_LOCAL) >= 0, path, "the file (flush)");
    const ssize_t image_bytes = H5Fget_file_image(file.get(), nullptr, 0);
    require_write(image_bytes > 0, path, "the file image");
    std::vector<char> image(static_cast<std::size_t>(image_bytes));
    require_write(H5Fget_file_image(file.get(), image.data(), image.size()) == image_bytes, path,
                  "the file image");
    require_write(file.close(), path, "the file (close)");
    // The core driver's image is the HDF5 part alone (from the superblock on): the seal covers
    // exactly these bytes, hashed here in memory rather than read back from the disk.
    const CheckpointSeal seal{image.size(), data::xxhash64(image.data(), image.size())};
    write_bytes(output.temporary_path(), path, seal_block(seal), image);
  }
  output.commit();
}

namespace {

// The checkpoint at `path`, open read-only through the checked driver, after the checks that name
// what is wrong with a file that is not one (missing, empty, not HDF5, damaged). The caller holds
// the HDF5 lock.
Hdf5Handle open_checkpoint_file(const std::string& path, SealCheck* seal = nullptr) {
  silence_hdf5();
  PHALANX_REQUIRE_INPUT(std::filesystem::exists(path), path, ": no such checkpoint file");
  // A run directory or its checkpoints/ folder is an easy slip for the file in it.
  PHALANX_REQUIRE_INPUT(std::filesystem::is_regular_file(path), path,
                        ": not a checkpoint file (a directory or a special file); give the .h5 file, e.g. ",
                        (std::filesystem::path(path) / "latest.h5").string());
  PHALANX_REQUIRE_INPUT(std::filesystem::file_size(path) > 0, path, ": checkpoint file is empty");
  // Before HDF5 reads a byte: HDF5 1.10 decodes some damaged files past its buffers (a crash, not
  // an error), and the seal refuses any change since writing. Checkpoints from before seals have
  // none and are parsed as they are. A resume opens its checkpoint once (OpenCheckpoint): one check.
  const SealCheck checked = check_checkpoint_seal(path);
  if (seal) *seal = checked;
  PHALANX_REQUIRE_INPUT(H5Fis_hdf5(path.c_str()) > 0, path, ": not an HDF5 checkpoint (or truncated)");
  Hdf5Handle file = open_checkpoint(path);
  if (!file.valid()) {
    const std::string refusal = data::detail::checked_file_refusal();
    throw_input_error(path + ": cannot open the checkpoint (" +
                      (refusal.empty() ? "truncated or damaged file" : refusal + "; file corrupt?") + ")");
  }
  // The root's attributes are the header: its object header is checked before HDF5 decodes them.
  data::detail::check_object_header(file.get(), "/", path);
  return file;
}

// The root group's `format` attribute; nullopt where it has none (a predictions file).
std::optional<std::string> root_format(hid_t root, const std::string& path) {
  const htri_t exists = H5Aexists(root, "format");
  PHALANX_REQUIRE_INPUT(exists >= 0, path, ": cannot read the root's attributes (file corrupt?)");
  if (exists == 0) return std::nullopt;
  return read_attribute_string(root, "format", path);
}

// Validates and reads the header of the open checkpoint `file` (read from `path`).
CheckpointHeader read_header(hid_t file, const std::string& path) {
  Hdf5Handle root(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose);
  PHALANX_REQUIRE_INPUT(root.valid(), path, ": cannot read the checkpoint's root group (truncated file?)");
  CheckpointHeader header;
  header.path = path;
  const std::optional<std::string> format = root_format(root.get(), path);
  PHALANX_REQUIRE_INPUT(format.has_value(), path, ": checkpoint attribute 'format' is missing");
  PHALANX_REQUIRE_INPUT(*format == "phalanx-checkpoint", path, ": format is '", *format,
                        "', expected 'phalanx-checkpoint'");
  header.version = static_cast<int>(read_attribute_int64(root.get(), "version", path));
  PHALANX_REQUIRE_INPUT(header.version == checkpoint_version, path, ": checkpoint version ", header.version,
                        " is not supported (this build reads version ", checkpoint_version, ")");
  header.world_size = static_cast<int>(read_attribute_int64(root.get(), "world_size", path));
  header.config_text = read_attribute_string(root.get(), "config", path);
  header.optimizer_type = read_attribute_string(root.get(), "optimizer", path);
  if (H5Aexists(root.get(), "data_order") > 0)
    header.data_order = read_attribute_string(root.get(), "data_order", path);
  if (H5Aexists(root.get(), "train_samples") > 0) {
    header.train_samples = read_attribute_int64(root.get(), "train_samples", path);
    PHALANX_REQUIRE_INPUT(header.train_samples > 0, path, ": attribute train_samples is ",
                          header.train_samples, ", not a sample count (an edited file?)");
  }
  header.position.global_step = read_int64(file, "/state/global_step", path);
  header.position.epoch = read_int64(file, "/state/epoch", path);
  header.position.step_in_epoch = read_int64(file, "/state/step_in_epoch", path);
  header.position.samples_seen = read_int64(file, "/state/samples_seen", path);
  header.seed = static_cast<std::uint64_t>(read_int64(file, "/state/rng_seed", path));
  if (H5Aexists(root.get(), "local_batches") > 0)
    header.local_batches = read_attribute_local_batches(
        root.get(), "local_batches", static_cast<std::size_t>(std::max(header.world_size, 0)), path);
  if (H5Aexists(root.get(), "learning_rate") > 0) {
    header.learning_rate = read_attribute_double(root.get(), "learning_rate", path);
    PHALANX_REQUIRE_INPUT(std::isfinite(header.learning_rate) && header.learning_rate > 0, path,
                          ": checkpoint attribute 'learning_rate' is ", header.learning_rate,
                          ", not a rate > 0");
  }
  if (H5Aexists(root.get(), "global_batch") > 0)
    header.global_batch = read_attribute_int64(root.get(), "global_batch", path);
  else if (!header.local_batches.empty())
    header.global_batch =
        std::accumulate(header.local_batches.begin(), header.local_batches.end(), std::int64_t{0});
  PHALANX_REQUIRE_INPUT(
      header.world_size >= 1 && (header.global_batch == 0 || header.global_batch >= header.world_size), path,
      ": world_size ", header.world_size, " and global batch ", header.global_batch,
      " do not describe a run (every rank trains at least one sample)");
  PHALANX_REQUIRE_INPUT(header.local_batches.empty() ||
                            std::accumulate(header.local_batches.begin(), header.local_batches.end(),
                                            std::int64_t{0}) == header.global_batch,
                        path, ": the local_batches attribute does not add up to the global_batch attribute ",
                        header.global_batch);
  header.running_totals =
      read_running_totals(file, static_cast<std::size_t>(std::max(header.world_size, 0)), path);
  if (link_exists(file, "/state/loss_scale_log2", path)) {
    const std::int64_t exponent = read_int64(file, "/state/loss_scale_log2", path);
    PHALANX_REQUIRE_INPUT(exponent >= -126 && exponent <= 126, path, ": /state/loss_scale_log2 is ", exponent,
                          ", outside [-126, 126]");
    optim::LossScalerState state;
    state.scale = std::ldexp(1.0, static_cast<int>(exponent));
    state.good_steps = read_int64(file, "/state/loss_scale_good_steps", path);
    state.skipped_steps = read_int64(file, "/state/loss_scale_skipped_steps", path);
    PHALANX_REQUIRE_INPUT(state.good_steps >= 0 && state.skipped_steps >= 0, path,
                          ": negative loss-scale step counts");
    header.loss_scale = state;
  }
  header.has_average = link_exists(file, "/state/ema_updates", path);
  header.early_stop = read_metric_watch(file, "/state/early_stop", path);
  header.keep_best = read_metric_watch(file, "/state/keep_best", path);
  if (link_exists(file, "/state/nonfinite_skipped_steps", path)) {
    header.nonfinite_skipped_steps = read_int64(file, "/state/nonfinite_skipped_steps", path);
    PHALANX_REQUIRE_INPUT(header.nonfinite_skipped_steps >= 0, path, ": /state/nonfinite_skipped_steps is ",
                          header.nonfinite_skipped_steps, ", negative");
  }
  return header;
}

}  // namespace

struct OpenCheckpoint::File {
  Hdf5Handle handle;
};

OpenCheckpoint::OpenCheckpoint(const std::string& path) {
  const auto hdf5_lock = data::lock_hdf5();
  // Held by this function until the header is read: a refused file is closed under the lock.
  SealCheck seal;
  Hdf5Handle file = open_checkpoint_file(path, &seal);
  header_ = read_header(file.get(), path);
  if (seal.state == SealState::Sealed) header_.contents_hash = seal.seal.hash;
  file_ = std::make_unique<File>(File{std::move(file)});
}

OpenCheckpoint::~OpenCheckpoint() {
  // HDF5 closes the file under the lock, as every HDF5 call is made.
  const auto hdf5_lock = data::lock_hdf5();
  file_.reset();
}

CheckpointHeader read_checkpoint_header(const std::string& path) {
  return OpenCheckpoint(path).header();
}

std::optional<std::string> stored_file_format(const std::string& path) {
  const auto hdf5_lock = data::lock_hdf5();
  Hdf5Handle file = open_checkpoint_file(path);
  Hdf5Handle root(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose);
  PHALANX_REQUIRE_INPUT(root.valid(), path, ": cannot read the file's root group (truncated file?)");
  return root_format(root.get(), path);
}

std::int64_t stored_global_batch(const CheckpointHeader& header) {
  if (header.global_batch > 0) return header.global_batch;
  // Written before the split was stored: every rank took train.batch_size.
  return static_cast<std::int64_t>(
             config::parse(header.config_text, header.path + ":/config").train.batch_size) *
         header.world_size;
}

void load_checkpoint(const std::string& path, backend::Backend& backend, nn::ParameterRegistry& registry,
                     optim::Optimizer* optimizer) {
  // One open for the header and the tensors: the weights come from the file the header was
  // validated in, and the checked driver opens and sizes it once.
  OpenCheckpoint(path).load(backend, registry, optimizer);
}

void OpenCheckpoint::load(backend::Backend& backend, nn::ParameterRegistry& registry,
                          optim::Optimizer* optimizer) const {
  const auto hdf5_lock = data::lock_hdf5();
  const Hdf5Handle& file = file_->handle;
  const CheckpointHeader& header = header_;
  const std::string& path = header_.path;
  std::vector<float> parameters(static_cast<std::size_t>(registry.parameter_count()), 0.0f);
  for (const auto& info : registry.parameters_info())
    read_floats(file.get(), "/model/" + info.name, info.shape, parameters.data() + info.offset, path);
  std::vector<float> buffers(static_cast<std::size_t>(registry.buffer_count()), 0.0f);
  for (const auto& info : registry.buffers_info())
    read_floats(file.get(), "/model/" + info.name, info.shape, buffers.data() + info.offset, path);
  std::vector<std::vector<float>> states;
  if (optimizer) {
    PHALANX_REQUIRE_INPUT(header.optimizer_type == optimizer->type(), path, ": the checkpoint holds '",
                          header.optimizer_type, "' optimizer state but the config asks for '",
                          optimizer->type(), "'");
    for (const auto& state_name : optimizer->state_names()) {
      states.emplace_back(static_cast<std::size_t>(registry.parameter_count()), 0.0f);
      for (const auto& info : registry.parameters_info())
        read_floats(file.get(), "/optimizer/" + info.name + "/" + state_name, info.shape,
                    states.back().data() + info.offset, path);
    }
  }
  // Everything validated and read: only now touch the live buffers.
  if (!parameters.empty())
    backend.copy_from_host(registry.parameters().data(), parameters.data(),
                           parameters.size() * sizeof(float));
  if (!buffers.empty())
    backend.copy_from_host(registry.buffers().data(), buffers.data(), buffers.size() * sizeof(float));
  if (optimizer) {
    const auto names = optimizer->state_names();
    for (std::size_t index = 0; index < names.size(); ++index)
      if (!states[index].empty())
        backend.copy_from_host(optimizer->state(names[index]).data(), states[index].data(),
                               states[index].size() * sizeof(float));
  }
}

WeightAverageState OpenCheckpoint::average(const nn::ParameterRegistry& registry) const {
  const auto hdf5_lock = data::lock_hdf5();
  const hid_t file = file_->handle.get();
  const std::string& path = header_.path;
  PHALANX_REQUIRE_INPUT(header_.has_average, path,
                        ": holds no weight average (/ema), written without train.ema");
  WeightAverageState average;
  average.parameters.assign(static_cast<std::size_t>(registry.parameter_count()), 0.0f);
  for (const auto& info : registry.parameters_info())
    read_floats(file, "/ema/" + info.name, info.shape, average.parameters.data() + info.offset, path);
  average.buffers.assign(static_cast<std::size_t>(registry.buffer_count()), 0.0f);
  for (const auto& info : registry.buffers_info())
    read_floats(file, "/ema/" + info.name, info.shape, average.buffers.data() + info.offset, path);
  average.updates = read_int64(file, "/state/ema_updates", path);
  PHALANX_REQUIRE_INPUT(average.updates >= 0, path, ": /state/ema_updates is ", average.updates,
                        ", negative");
  return average;
}

std::vector<ModelTensor> OpenCheckpoint::model_tensors(const std::string& group) const {
  const auto hdf5_lock = data::lock_hdf5();
  const hid_t file = file_->handle.get();
  const std::string& path = header_.path;
  PHALANX_REQUIRE_INPUT(
      link_exists(file, group, path), path, ": ", group, ": missing (",
      group == "/ema" ? "no weight average: the run had no train.ema" : "no weights in the file", ")");
  data::detail::check_object_header(file, group, path);
  Hdf5Handle model(H5Gopen2(file, group.c_str(), H5P_DEFAULT), H5Gclose);
  PHALANX_REQUIRE_INPUT(model.valid(), path, ": ", group, ": unreadable");
  std::vector<std::string> names;
  PHALANX_REQUIRE_INPUT(data::detail::visit_objects(model.get(),
                                                    [&](const char* name, H5O_type_t type) {
                                                      if (type == H5O_TYPE_DATASET) names.emplace_back(name);
                                                      return herr_t{0};
                                                    }) >= 0,
                        path, ": ", group, ": its groups cannot be listed (damaged file?)");
  std::vector<ModelTensor> tensors;
  // Unknown memory: a bound no model's weights reach, so only the absurd is refused.
  const std::uint64_t memory_bytes = usable_memory_bytes().value_or(std::uint64_t{1} << 40);
  std::uint64_t total_bytes = 0;
  const std::string counter = "/num_batches_tracked";
  for (const std::string& name : names) {
    if (name.ends_with(counter) || name == counter.substr(1)) continue;  // torch's counter, not kept
    const std::string full_name = group + "/" + name;
    Hdf5Handle dataset = data::detail::open_checked_dataset(file, full_name, path);
    PHALANX_REQUIRE_INPUT(dataset.valid(), path, ": ", full_name, ": unreadable");
    // Checked before the values are allocated: a dataset's shape is only a header field, and an
    // edited file may give one of terabytes (unwritten chunks read as zeros).
    require_number_dataset(dataset.get(), full_name, path);
    data::detail::require_sound_dataset_storage(dataset.get(), path + ": " + full_name);
    ModelTensor tensor{name, dataset_shape(dataset.get()), {}};
    total_bytes += static_cast<std::uint64_t>(tensor.shape.elements()) * sizeof(float);
    PHALANX_REQUIRE_INPUT(total_bytes <= memory_bytes, path, ": ", full_name, ": shape ",
                          tensor.shape.to_string(), " brings the weights to ", total_bytes >> 20,
                          " MiB, more than this machine's ", memory_bytes >> 20,
                          " MiB of memory: not a model's weights");
    tensor.values.resize(static_cast<std::size_t>(tensor.shape.elements()));
    read_float_values(dataset.get(), full_name, tensor.shape, tensor.values.data(), path);
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

}  // namespace phalanx::train
