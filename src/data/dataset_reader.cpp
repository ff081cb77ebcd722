// Reading the HDF5 dataset of docs/DESIGN.md §4. Every field is validated before anything is used, and
// every failure is an input error that names the file and the dataset or attribute at fault, so a
// user with a bad file reads one clear line instead of an HDF5 error stack or a crash mid-training.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "class_names.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/checked_chunk_decoding.hpp"
#include "phalanx/data/checked_file_driver.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/dataset_storage_check.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "phalanx/data/hdf5_lock.hpp"
#include "phalanx/data/object_header_check.hpp"
#include "source_layout.hpp"

namespace phalanx::data {
namespace {

using detail::Hdf5Handle;

// The splits the schema knows, in the order DatasetInfo lists them.
constexpr const char* known_splits[] = {"train", "test", "val"};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw_input_error(path + ": " + what);
}

Hdf5Handle open_file(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status)) fail(path, "no such file");
  if (std::filesystem::is_directory(status)) fail(path, "is a directory, not a dataset file");
  if (std::filesystem::file_size(path, error) == 0 && !error)
    fail(path, "empty file (0 bytes), not a dataset");
  // H5Fis_hdf5 only looks at the signature; H5Fopen also notices a file shorter than its superblock says.
  if (H5Fis_hdf5(path.c_str()) <= 0) fail(path, "not an HDF5 file (or truncated)");
  // Through the checked driver: a damaged heap of class names would otherwise hang HDF5.
  const Hdf5Handle access = detail::checked_file_access();
  Hdf5Handle file = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
  if (!file.valid()) {
    const std::string refusal = detail::checked_file_refusal();
    fail(path, refusal.empty() ? "not an HDF5 file (or truncated)" : refusal + " (file corrupt?)");
  }
  // The root's attributes say what the file is: its header is checked before HDF5 decodes them.
  detail::check_object_header(file.get(), "/", path);
  return file;
}

// Where an attribute lives, for messages: "attribute \"mean\" of /train/images".
std::string attribute_place(const std::string& object_name, const char* attribute_name) {
  return std::string("attribute \"") + attribute_name + "\" of " + object_name;
}

// Opens an attribute and its type and dataspace; a missing one is an input error.
struct OpenAttribute {
  Hdf5Handle attribute, type, space;
  hssize_t count = 0;
  int rank = 0;
};

OpenAttribute open_attribute(const std::string& path, hid_t object, const std::string& object_name,
                             const char* attribute_name) {
  const std::string place = attribute_place(object_name, attribute_name);
  if (H5Aexists(object, attribute_name) <= 0) fail(path, place + ": missing");
  OpenAttribute opened;
  opened.attribute = detail::attribute_handle(H5Aopen(object, attribute_name, H5P_DEFAULT));
  if (!opened.attribute.valid()) fail(path, place + ": cannot be opened (file corrupt?)");
  opened.type = detail::datatype_handle(H5Aget_type(opened.attribute.get()));
  opened.space = detail::dataspace_handle(H5Aget_space(opened.attribute.get()));
  if (!opened.type.valid() || !opened.space.valid()) fail(path, place + ": cannot be read (file corrupt?)");
  opened.count = H5Sget_simple_extent_npoints(opened.space.get());
  opened.rank = H5Sget_simple_extent_ndims(opened.space.get());
  if (opened.count < 0 || opened.rank < 0) fail(path, place + ": cannot be read (file corrupt?)");
  return opened;
}

// Reads an attribute of strings (variable or fixed length, as h5py or other tools write them).
std::vector<std::string> read_strings(const std::string& path, const OpenAttribute& opened,
                                      const std::string& place) {
  if (H5Tget_class(opened.type.get()) != H5T_STRING)
    fail(path, place + ": expected string, got " + detail::describe_type(opened.type.get()));
  const auto count = static_cast<std::size_t>(opened.count);
  std::vector<std::string> values;
  // An empty array has nothing to read (H5Aread fails on it): the caller says what it needed.
  if (count == 0) return values;
  values.reserve(count);
  if (H5Tis_variable_str(opened.type.get()) > 0) {
    Hdf5Handle memory_type = detail::variable_string_type_for(opened.type.get());
    std::vector<char*> pointers(count, nullptr);
    if (H5Aread(opened.attribute.get(), memory_type.get(), pointers.data()) < 0) {
      // The strings live in a global heap collection; the checked driver says when it is damaged.
      fail(path, detail::unreadable_message(place, detail::checked_file_refusal()));
    }
    for (char* pointer : pointers) values.emplace_back(pointer ? pointer : "");
    H5Dvlen_reclaim(memory_type.get(), opened.space.get(), H5P_DEFAULT, pointers.data());
  } else {
    const std::size_t length = H5Tget_size(opened.type.get());
    std::vector<char> buffer(count * length + 1, '\0');
    if (H5Aread(opened.attribute.get(), opened.type.get(), buffer.data()) < 0)
      fail(path, place + ": cannot be read (file corrupt?)");
    values = detail::split_fixed_length_strings(buffer, count, length,
                                                H5Tget_strpad(opened.type.get()) == H5T_STR_SPACEPAD);
  }
  return values;
}

std::string read_string_attribute(const std::string& path, hid_t object, const std::string& object_name,
                                  const char* attribute_name) {
  const std::string place = attribute_place(object_name, attribute_name);
  const OpenAttribute opened = open_attribute(path, object, object_name, attribute_name);
  if (opened.count != 1)
    fail(path, place + ": expected one string, got " + std::to_string(opened.count) + " values");
  return read_strings(path, opened, place).front();
}

long long read_integer_attribute(const std::string& path, hid_t object, const std::string& object_name,
                                 const char* attribute_name) {
  const std::string place = attribute_place(object_name, attribute_name);
  const OpenAttribute opened = open_attribute(path, object, object_name, attribute_name);
  if (H5Tget_class(opened.type.get()) != H5T_INTEGER)
    fail(path, place + ": expected an integer, got " + detail::describe_type(opened.type.get()));
  if (opened.count != 1) fail(path, place + ": expected one value, got " + std::to_string(opened.count));
  long long value = 0;
  if (H5Aread(opened.attribute.get(), H5T_NATIVE_LLONG, &value) < 0)
    fail(path, place + ": cannot be read (file corrupt?)");
  return value;
}

std::vector<float> read_float_array_attribute(const std::string& path, hid_t object,
                                              const std::string& object_name, const char* attribute_name) {
  const std::string place = attribute_place(object_name, attribute_name);
  const OpenAttribute opened = open_attribute(path, object, object_name, attribute_name);
  if (H5Tget_class(opened.type.get()) != H5T_FLOAT)
    fail(path, place + ": expected float32, got " + detail::describe_type(opened.type.get()));
  std::vector<float> values(static_cast<std::size_t>(opened.count));
  if (!values.empty() && H5Aread(opened.attribute.get(), H5T_NATIVE_FLOAT, values.data()) < 0)
    fail(path, place + ": cannot be read (file corrupt?)");
  return values;
}

// An open dataset with its type and shape, after checking it exists and is a dataset.
struct OpenDataset {
  Hdf5Handle dataset, type, space;
  std::vector<hsize_t> dimensions;
};

OpenDataset open_dataset(const std::string& path, hid_t group, const std::string& split_name,
                         const char* name) {
  const std::string dataset_name = "/" + split_name + "/" + name;
  if (!detail::link_exists(group, name)) fail(path, dataset_name + ": missing");
  OpenDataset opened;
  opened.dataset = detail::open_checked_dataset(group, name, path);
  if (!opened.dataset.valid()) fail(path, dataset_name + ": not a dataset");
  opened.type = detail::datatype_handle(H5Dget_type(opened.dataset.get()));
  opened.space = detail::dataspace_handle(H5Dget_space(opened.dataset.get()));
  if (!opened.type.valid() || !opened.space.valid())
    fail(path, dataset_name + ": cannot be read (file corrupt?)");
  const int rank = H5Sget_simple_extent_ndims(opened.space.get());
  if (rank < 0) fail(path, dataset_name + ": cannot be read (file corrupt?)");
  opened.dimensions.resize(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(opened.space.get(), opened.dimensions.data(), nullptr);
  // Every read of this file's images and labels comes after this validation, on the same open file.
  detail::require_sound_dataset_storage(opened.dataset.get(), path + ": " + dataset_name);
  if (const std::string problem = detail::unwritten_storage_problem(opened.dataset.get()); !problem.empty())
    fail(path, dataset_name + ": " + problem);
  return opened;
}

std::string shape_text(const std::vector<hsize_t>& dimensions) {
  std::string text = "[";
  for (std::size_t axis = 0; axis < dimensions.size(); ++axis) {
    if (axis) text += ",";
    text += std::to_string(dimensions[axis]);
  }
  return text + "]";
}

DatasetInfo::SplitInfo validate_split(const std::string& path, hid_t file, const std::string& split_name) {
  const std::string group_name = "/" + split_name;
  // Its links are looked up next: its header (and local heap) is checked first.
  detail::check_object_header(file, group_name, path);
  Hdf5Handle group = detail::group_handle(H5Gopen2(file, split_name.c_str(), H5P_DEFAULT));
  if (!group.valid()) fail(path, group_name + ": not a group");

  const std::string images_name = group_name + "/images", labels_name = group_name + "/labels";
  const OpenDataset images = open_dataset(path, group.get(), split_name, "images");
  if (!detail::is_integer_type(images.type.get(), 1, H5T_SGN_NONE))
    fail(path, images_name + ": expected uint8, got " + detail::describe_type(images.type.get()));
  if (images.dimensions.size() != 4)
    fail(path,
         images_name + ": expected 4 dimensions [N,H,W,C], got " + std::to_string(images.dimensions.size()));
  if (images.dimensions[0] == 0) fail(path, images_name + ": has no samples (N = 0)");
  constexpr hsize_t largest_side = std::numeric_limits<int>::max();
  for (std::size_t axis = 1; axis < 4; ++axis)
    if (images.dimensions[axis] == 0 || images.dimensions[axis] > largest_side)
      fail(path,
           images_name + ": shape " + shape_text(images.dimensions) + " has an empty or oversized H, W or C");
  // As mapped sources: a sample is read whole (evaluation reads a rank's part before any memory
  // check), so a 40000x40000 image in a small compressed file was an allocation that failed.
  // In 128 bits: three sides of up to 2^31 overflow 64.
  const unsigned __int128 sample_values =
      static_cast<unsigned __int128>(images.dimensions[1]) * images.dimensions[2] * images.dimensions[3];
  if (sample_values > maximum_sample_values)
    fail(path, images_name + ": shape " + shape_text(images.dimensions) + ": a sample holds more than the " +
                   std::to_string(maximum_sample_values) + " values phalanx reads (16384 x 16384 x 1)");

  const OpenDataset labels = open_dataset(path, group.get(), split_name, "labels");
  if (!detail::is_integer_type(labels.type.get(), 4, H5T_SGN_2))
    fail(path, labels_name + ": expected int32, got " + detail::describe_type(labels.type.get()) +
                   " (labels must be stored as int32 exactly)");
  if (labels.dimensions.size() != 1)
    fail(path, labels_name + ": expected 1 dimension [N], got " + std::to_string(labels.dimensions.size()));
  if (labels.dimensions[0] != images.dimensions[0])
    fail(path, labels_name + " has " + std::to_string(labels.dimensions[0]) + " entries but " + images_name +
                   " has " + std::to_string(images.dimensions[0]));

  DatasetInfo::SplitInfo info;
  info.name = split_name;
  info.count = static_cast<std::int64_t>(images.dimensions[0]);
  info.height = static_cast<int>(images.dimensions[1]);
  info.width = static_cast<int>(images.dimensions[2]);
  info.channels = static_cast<int>(images.dimensions[3]);
  return info;
}

std::string sample_shape_text(const DatasetInfo::SplitInfo& split) {
  return std::to_string(split.height) + "x" + std::to_string(split.width) + "x" +
         std::to_string(split.channels);
}

// Opens `path`, validates the whole schema into `info`, and returns the open file for reading.
Hdf5Handle open_and_validate(const std::string& path, DatasetInfo& info) {
  detail::silence_hdf5_error_printing();
  Hdf5Handle file = open_file(path);
  info = DatasetInfo{};
  info.path = path;

  const std::string format = read_string_attribute(path, file.get(), "/", "format");
  if (format != dataset_format)
    fail(path, "attribute \"format\" of / is \"" + format + "\", expected \"" + dataset_format +
                   "\" (not a phalanx dataset)");
  const long long version = read_integer_attribute(path, file.get(), "/", "version");
  if (version != dataset_version)
    fail(path, "version " + std::to_string(version) + " is not supported (this build reads version " +
                   std::to_string(dataset_version) + ")");
  info.version = static_cast<int>(version);

  const OpenAttribute classes = open_attribute(path, file.get(), "/", "classes");
  if (classes.rank != 1) fail(path, "attribute \"classes\" of / must be a 1-D array of strings");
  info.classes = read_strings(path, classes, attribute_place("/", "classes"));
  if (info.classes.empty()) fail(path, "attribute \"classes\" of / is empty (at least one class is needed)");
  if (const std::string problem = class_names_problem(info.classes); !problem.empty())
    fail(path, "attribute \"classes\" of /: " + problem);

  for (const char* split_name : known_splits) {
    if (detail::link_exists(file.get(), split_name))
      info.splits.push_back(validate_split(path, file.get(), split_name));
  }
  for (const char* required : {"train", "test"})
    if (!info.find_split(required)) fail(path, std::string("/") + required + ": missing");
  const DatasetInfo::SplitInfo& train = *info.find_split("train");
  for (const auto& split : info.splits)
    if (split.height != train.height || split.width != train.width || split.channels != train.channels)
      fail(path, "/" + split.name + "/images has samples of " + sample_shape_text(split) +
                     " (HxWxC) but /train/images has " + sample_shape_text(train));

  Hdf5Handle train_images = detail::open_checked_dataset(file.get(), "/train/images", path);
  info.mean = read_float_array_attribute(path, train_images.get(), "/train/images", "mean");
  info.standard_deviation = read_float_array_attribute(path, train_images.get(), "/train/images", "std");
  const auto channels = static_cast<std::size_t>(train.channels);
  const auto require_one_per_channel = [&](const char* name, const std::vector<float>& values) {
    if (values.size() != channels)
      fail(path, "/train/images: attribute \"" + std::string(name) + "\" has " +
                     std::to_string(values.size()) + " values, expected " + std::to_string(channels) +
                     " (one per channel)");
  };
  require_one_per_channel("mean", info.mean);
  require_one_per_channel("std", info.standard_deviation);
  for (std::size_t channel = 0; channel < channels; ++channel) {
    // Statistics of pixels scaled to [0, 1]: a mean outside it, or a deviation past 0.5 (half the
    // pixels 0 and half 1), was not computed from the images.
    if (!std::isfinite(info.mean[channel]) || info.mean[channel] < 0.0f || info.mean[channel] > 1.0f)
      fail(path, "/train/images: attribute \"mean\"[" + std::to_string(channel) +
                     "] = " + std::to_string(info.mean[channel]) + " is not a mean of pixels in [0, 1]");
    if (!std::isfinite(info.standard_deviation[channel]) || info.standard_deviation[channel] <= 0.0f ||
        info.standard_deviation[channel] > 0.5f)
      fail(path, "/train/images: attribute \"std\"[" + std::to_string(channel) +
                     "] = " + std::to_string(info.standard_deviation[channel]) +
                     " is not a standard deviation of pixels in [0, 1] (it must lie in (0, 0.5])");
  }
  return file;
}

const DatasetInfo::SplitInfo& require_split(const DatasetInfo& info, const std::string& split_name) {
  if (const auto* split = info.find_split(split_name)) return *split;
  std::string available;
  for (const auto& split : info.splits) {
    if (!available.empty()) available += ", ";
    available += split.name;
  }
  fail(info.path, "no split \"" + split_name + "\" (the file has: " + available + ")");
}

std::vector<std::int32_t> read_validated_labels(const std::string& path, hid_t file, const DatasetInfo& info,
                                                const DatasetInfo::SplitInfo& split) {
  const std::string labels_name = "/" + split.name + "/labels";
  Hdf5Handle dataset = detail::open_checked_dataset(file, labels_name, path);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(split.count));
  if (!dataset.valid() ||
      detail::read_checked(dataset.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data()) < 0)
    fail(path, labels_name + ": cannot read the data (" + detail::read_failure_reason() + ")");
  const auto class_count = static_cast<std::int32_t>(info.classes.size());
  const auto bad = std::find_if(labels.begin(), labels.end(), [class_count](std::int32_t label) {
    return label < 0 || label >= class_count;
  });
  if (bad != labels.end())
    fail(path, labels_name + "[" + std::to_string(bad - labels.begin()) + "] = " + std::to_string(*bad) +
                   " is outside [0, " + std::to_string(class_count) + ") (" + std::to_string(class_count) +
                   " classes)");
  return labels;
}

// Reads `dataset_name` whole in slabs along its first axis (a whole number of HDF5 chunks per slab,
// about 64 MiB, so memory stays bounded and no chunk is decompressed twice) and returns the
// "xxh64:<hex>" checksum of its values as little-endian bytes of `memory_type`.
std::string hash_dataset(const std::string& path, hid_t file, const std::string& dataset_name,
                         hid_t memory_type) {
  constexpr std::size_t slab_target_bytes = std::size_t{64} << 20;
  Hdf5Handle dataset = detail::open_checked_dataset(file, dataset_name, path);
  Hdf5Handle file_space = detail::dataspace_handle(dataset.valid() ? H5Dget_space(dataset.get()) : -1);
  if (!file_space.valid()) fail(path, dataset_name + ": cannot be read (file corrupt?)");
  const int rank = H5Sget_simple_extent_ndims(file_space.get());
  std::vector<hsize_t> dimensions(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank < 1 || H5Sget_simple_extent_dims(file_space.get(), dimensions.data(), nullptr) < 0)
    fail(path, dataset_name + ": cannot be read (file corrupt?)");
  std::size_t row_bytes = H5Tget_size(memory_type);
  for (std::size_t axis = 1; axis < dimensions.size(); ++axis) row_bytes *= dimensions[axis];

  hsize_t chunk_rows = 1;
  Hdf5Handle properties = detail::property_list_handle(H5Dget_create_plist(dataset.get()));
  if (properties.valid() && H5Pget_layout(properties.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(dimensions.size());
    if (H5Pget_chunk(properties.get(), rank, chunk.data()) == rank)
      chunk_rows = std::max<hsize_t>(1, chunk[0]);
  }
  const hsize_t slab_rows =
      chunk_rows * std::max<hsize_t>(1, slab_target_bytes / std::max<std::size_t>(1, row_bytes * chunk_rows));

  Xxhash64Stream hasher;
  std::vector<unsigned char> buffer;
  std::vector<hsize_t> start(dimensions.size(), 0), count = dimensions;
  for (hsize_t first = 0; first < dimensions[0]; first += slab_rows) {
    start[0] = first;
    count[0] = std::min(slab_rows, dimensions[0] - first);
    const hsize_t slab_bytes = count[0] * row_bytes;
    buffer.resize(static_cast<std::size_t>(slab_bytes));
    // The memory space has the slab's own shape, so HDF5 copies the rows in C order unchanged.
    Hdf5Handle memory_space =
        detail::dataspace_handle(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr));
    const bool selected =
        memory_space.valid() && H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                                    count.data(), nullptr) >= 0;
    if (!selected || detail::read_checked(dataset.get(), memory_type, memory_space.get(), file_space.get(),
                                          H5P_DEFAULT, buffer.data()) < 0)
      fail(path, dataset_name + ": cannot read rows " + std::to_string(first) + ".." +
                     std::to_string(first + count[0]) + " (" + detail::read_failure_reason() + ")");
    hasher.update(buffer.data(), buffer.size());
  }
  return format_checksum(hasher.digest());
}

}  // namespace

const DatasetInfo::SplitInfo* DatasetInfo::find_split(const std::string& name) const {
  const auto found =
      std::find_if(splits.begin(), splits.end(), [&](const SplitInfo& split) { return split.name == name; });
  return found == splits.end() ? nullptr : &*found;
}

DatasetInfo read_dataset_info(const std::string& path) {
  const auto hdf5_lock = lock_hdf5();
  DatasetInfo info;
  open_and_validate(path, info);
  return info;
}

std::vector<std::int32_t> read_labels(const std::string& path, const std::string& split_name) {
  const auto hdf5_lock = lock_hdf5();
  DatasetInfo info;
  Hdf5Handle file = open_and_validate(path, info);
  return read_validated_labels(path, file.get(), info, require_split(info, split_name));
}

Split read_split(const std::string& path, const std::string& split_name) {
  const auto hdf5_lock = lock_hdf5();
  DatasetInfo info;
  Hdf5Handle file = open_and_validate(path, info);
  const DatasetInfo::SplitInfo& split_info = require_split(info, split_name);

  Split split;
  split.name = split_info.name;
  split.count = split_info.count;
  split.height = split_info.height;
  split.width = split_info.width;
  split.channels = split_info.channels;
  split.labels = read_validated_labels(path, file.get(), info, split_info);

  const std::string images_name = "/" + split.name + "/images";
  Hdf5Handle images = detail::open_checked_dataset(file.get(), images_name, path);
  split.images.resize(static_cast<std::size_t>(split.count * split.image_bytes()));
  if (!images.valid()) fail(path, images_name + ": cannot be opened (" + detail::hdf5_failure_reason() + ")");
  // In slabs of whole chunks (HDF5 reads each chunk once either way), so that a damaged chunk can
  // be named by its samples, as a streamed read names it: a slab that fails is read again a chunk
  // at a time to find it.
  hsize_t chunk_rows = static_cast<hsize_t>(std::max<std::int64_t>(1, split.count));
  const Hdf5Handle creation = detail::property_list_handle(H5Dget_create_plist(images.get()));
  hsize_t chunk[4] = {0, 0, 0, 0};
  if (creation.valid() && H5Pget_layout(creation.get()) == H5D_CHUNKED &&
      H5Pget_chunk(creation.get(), 4, chunk) == 4 && chunk[0] > 0)
    chunk_rows = chunk[0];
  const auto row_bytes = static_cast<hsize_t>(split.image_bytes());
  constexpr hsize_t slab_target_bytes = 16u << 20;
  const hsize_t slab_rows =
      chunk_rows * std::max<hsize_t>(1, slab_target_bytes / std::max<hsize_t>(1, row_bytes * chunk_rows));
  const Hdf5Handle file_space = detail::dataspace_handle(H5Dget_space(images.get()));
  const auto rows = static_cast<hsize_t>(split.count);
  // Empty when rows [first, first + count) read; else why not (taken before the handles close:
  // closing one clears HDF5's error stack).
  const auto read_rows = [&](hsize_t first, hsize_t count) -> std::string {
    const hsize_t shape[4] = {count, static_cast<hsize_t>(split.height), static_cast<hsize_t>(split.width),
                              static_cast<hsize_t>(split.channels)};
    const hsize_t start[4] = {first, 0, 0, 0};
    const Hdf5Handle memory_space = detail::dataspace_handle(H5Screate_simple(4, shape, nullptr));
    if (file_space.valid() && memory_space.valid() &&
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, shape, nullptr) >= 0 &&
        detail::read_checked(images.get(), H5T_NATIVE_UINT8, memory_space.get(), file_space.get(),
                             H5P_DEFAULT, split.images.data() + first * row_bytes) >= 0)
      return {};
    return detail::read_failure_reason();
  };
  for (hsize_t first = 0; first < rows; first += slab_rows) {
    const hsize_t count = std::min(slab_rows, rows - first);
    std::string reason = read_rows(first, count);
    if (reason.empty()) continue;
    hsize_t damaged = first, damaged_count = count;
    for (hsize_t chunk_first = first; chunk_first < first + count; chunk_first += chunk_rows) {
      const hsize_t chunk_count = std::min(chunk_rows, first + count - chunk_first);
      const std::string chunk_reason = read_rows(chunk_first, chunk_count);
      if (chunk_reason.empty()) continue;
      reason = chunk_reason;
      damaged = chunk_first;
      damaged_count = chunk_count;
      break;
    }
    const std::string samples =
        "[" + std::to_string(damaged) + ":" + std::to_string(damaged + damaged_count) + "]";
    fail(path, images_name + samples + ": cannot read the data (" + reason + ") (the chunk of samples " +
                   samples + " is damaged)");
  }
  return split;
}

std::string verify_checksums(const std::string& path) {
  const auto hdf5_lock = lock_hdf5();
  DatasetInfo info;
  Hdf5Handle file = open_and_validate(path, info);

  struct Target {
    std::string name;
    hid_t memory_type;
  };
  std::vector<Target> targets;
  for (const auto& split : info.splits) {
    // Labels are hashed as little-endian int32 whatever the host, matching the writer.
    targets.push_back({"/" + split.name + "/images", H5T_NATIVE_UINT8});
    targets.push_back({"/" + split.name + "/labels", H5T_STD_I32LE});
  }
  std::vector<std::string> stored(targets.size());
  std::vector<bool> has_checksum(targets.size(), false);
  std::size_t missing = 0;
  for (std::size_t index = 0; index < targets.size(); ++index) {
    Hdf5Handle dataset = detail::open_checked_dataset(file.get(), targets[index].name, path);
    if (!dataset.valid()) fail(path, targets[index].name + ": cannot be opened (file corrupt?)");
    has_checksum[index] = H5Aexists(dataset.get(), checksum_attribute) > 0;
    if (has_checksum[index])
      stored[index] = read_string_attribute(path, dataset.get(), targets[index].name, checksum_attribute);
    else
      ++missing;
  }
  if (missing == targets.size())
    fail(path,
         "no checksums stored (the file was written before phalanx recorded them): nothing to verify; "
         "import it again to add them");
  for (std::size_t index = 0; index < targets.size(); ++index) {
    const std::string place = attribute_place(targets[index].name, checksum_attribute);
    if (!has_checksum[index]) fail(path, place + ": missing (the other datasets have one)");
    const std::string prefix = std::string(checksum_algorithm) + ":";
    if (stored[index].rfind(prefix, 0) != 0)
      fail(path, place + " is \"" + stored[index] + "\": unknown algorithm (this build checks " +
                     checksum_algorithm + ")");
  }

  std::int64_t total_bytes = 0;
  for (std::size_t index = 0; index < targets.size(); ++index) {
    const std::string computed =
        hash_dataset(path, file.get(), targets[index].name, targets[index].memory_type);
    if (computed != stored[index])
      fail(path, targets[index].name + ": checksum mismatch (stored " + stored[index] + ", computed " +
                     computed + "): its bytes changed after it was written");
  }
  for (const auto& split : info.splits)
    total_bytes += split.count * (static_cast<std::int64_t>(split.height) * split.width * split.channels + 4);
  return "checksum ok (" + std::string(checksum_algorithm) + " of " + std::to_string(targets.size()) +
         " datasets, " + std::to_string(total_bytes) + " bytes)";
}

Split read_samples(const std::string& path, const std::string& split_name,
                   const std::vector<std::int64_t>& indices) {
  const auto hdf5_lock = lock_hdf5();
  DatasetInfo info;
  Hdf5Handle file = open_and_validate(path, info);
  const DatasetInfo::SplitInfo& split_info = require_split(info, split_name);

  Split split;
  split.name = split_info.name;
  split.count = static_cast<std::int64_t>(indices.size());
  split.height = split_info.height;
  split.width = split_info.width;
  split.channels = split_info.channels;
  split.images.resize(static_cast<std::size_t>(split.count * split.image_bytes()));
  split.labels.resize(indices.size());

  const std::string images_name = "/" + split.name + "/images", labels_name = "/" + split.name + "/labels";
  Hdf5Handle images = detail::open_checked_dataset(file.get(), images_name, path);
  Hdf5Handle labels = detail::open_checked_dataset(file.get(), labels_name, path);
  Hdf5Handle image_space = detail::dataspace_handle(images.valid() ? H5Dget_space(images.get()) : -1);
  Hdf5Handle label_space = detail::dataspace_handle(labels.valid() ? H5Dget_space(labels.get()) : -1);
  if (!image_space.valid() || !label_space.valid())
    fail(path, "/" + split.name + ": cannot be read (file corrupt?)");

  const hsize_t image_count[4] = {1, static_cast<hsize_t>(split.height), static_cast<hsize_t>(split.width),
                                  static_cast<hsize_t>(split.channels)};
  const hsize_t label_count = 1;
  Hdf5Handle image_memory = detail::dataspace_handle(H5Screate_simple(4, image_count, nullptr));
  Hdf5Handle label_memory = detail::dataspace_handle(H5Screate_simple(1, &label_count, nullptr));
  const auto class_count = static_cast<std::int32_t>(info.classes.size());
  for (std::size_t position = 0; position < indices.size(); ++position) {
    const std::int64_t index = indices[position];
    if (index < 0 || index >= split_info.count)
      fail(path, images_name + ": sample " + std::to_string(index) + " is outside [0, " +
                     std::to_string(split_info.count) + ")");
    const hsize_t image_start[4] = {static_cast<hsize_t>(index), 0, 0, 0};
    const hsize_t label_start = static_cast<hsize_t>(index);
    std::uint8_t* destination =
        split.images.data() + position * static_cast<std::size_t>(split.image_bytes());
    if (H5Sselect_hyperslab(image_space.get(), H5S_SELECT_SET, image_start, nullptr, image_count, nullptr) <
            0 ||
        detail::read_checked(images.get(), H5T_NATIVE_UINT8, image_memory.get(), image_space.get(),
                             H5P_DEFAULT, destination) < 0)
      fail(path, images_name + "[" + std::to_string(index) + "]: cannot read the data (" +
                     detail::read_failure_reason() + ")");
    if (H5Sselect_hyperslab(label_space.get(), H5S_SELECT_SET, &label_start, nullptr, &label_count, nullptr) <
            0 ||
        detail::read_checked(labels.get(), H5T_NATIVE_INT32, label_memory.get(), label_space.get(),
                             H5P_DEFAULT, &split.labels[position]) < 0)
      fail(path, labels_name + "[" + std::to_string(index) + "]: cannot read the data (" +
                     detail::read_failure_reason() + ")");
    const std::int32_t label = split.labels[position];
    if (label < 0 || label >= class_count)
      fail(path, labels_name + "[" + std::to_string(index) + "] = " + std::to_string(label) +
                     " is outside [0, " + std::to_string(class_count) + ") (" + std::to_string(class_count) +
                     " classes)");
  }
  return split;
}

}  // namespace phalanx::data
