// The HDF5 plumbing of mapped sources. Every handle is an Hdf5Handle; callers hold the HDF5 lock.
#include "mapped_file.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "phalanx/core/error.hpp"
#include "phalanx/data/checked_chunk_decoding.hpp"
#include "phalanx/data/checked_file_driver.hpp"
#include "phalanx/data/dataset_storage_check.hpp"
#include "phalanx/data/hdf5_objects.hpp"
#include "phalanx/data/object_header_check.hpp"

namespace phalanx::data::mapped {

void fail(const config::DatasetLocation& location, const std::string& key, const std::string& message) {
  throw_input_error(location.file + ":" + location.dataset + (key.empty() ? "" : " (" + key + ")") + ": " +
                    message);
}

detail::Hdf5Handle open_file(const std::string& path, const std::string& key) {
  const std::string where = path + (key.empty() ? "" : " (" + key + ")");
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status)) throw_input_error(where + ": no such file");
  if (std::filesystem::is_directory(status)) throw_input_error(where + ": is a directory, not an HDF5 file");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw_input_error(where + ": not an HDF5 file (or truncated)");
  // The checked driver, as for phalanx's own datasets: a damaged global heap must not hang HDF5.
  detail::Hdf5Handle access = detail::checked_file_access();
#if H5_VERSION_GE(1, 10, 7)
  // use_file_locking = true, ignore_when_disabled = true: lock where the file system can.
  H5Pset_file_locking(access.get(), 1, 1);
#endif
  detail::Hdf5Handle file = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
  if (!file.valid()) {
    if (const std::string refusal = detail::checked_file_refusal(); !refusal.empty())
      throw_input_error(where + ": " + refusal + " (file corrupt?)");
    throw_input_error(where +
                      ": cannot be opened read-only (truncated, or locked by a writer; on a file "
                      "system without locks set HDF5_USE_FILE_LOCKING=FALSE)");
  }
  // The root's attributes (a phalanx dataset's "format") are read first: its header is checked.
  detail::check_object_header(file.get(), "/", path);
  return file;
}

std::vector<std::string> dataset_names(hid_t file, const std::string& path) {
  std::vector<std::string> names;
  detail::visit_objects(file, [&](const char* name, H5O_type_t type) -> herr_t {
    if (std::string(name) == ".") return 0;
    const std::string full = std::string("/").append(name);
    if (type == H5O_TYPE_DATASET) names.push_back(full);
    // HDF5 visits the group's links next: its header (and local heap) is checked first.
    if (type == H5O_TYPE_GROUP) detail::check_object_header(file, full, path);
    return 0;
  });
  return names;
}

detail::Hdf5Handle open_dataset(hid_t file, const config::DatasetLocation& location, const std::string& key,
                                std::int64_t cache_bytes) {
  // H5Lexists needs every intermediate group to exist: walk the path one link at a time.
  std::string prefix;
  std::size_t start = 1;
  bool exists = location.dataset.size() > 1;
  while (exists && start <= location.dataset.size()) {
    const std::size_t slash = std::min(location.dataset.find('/', start), location.dataset.size());
    prefix = location.dataset.substr(0, slash);
    exists = H5Lexists(file, prefix.c_str(), H5P_DEFAULT) > 0;
    // The next lookup is inside this group: its header (and local heap) is checked first.
    if (exists) detail::check_object_header(file, prefix, location.file);
    start = slash + 1;
  }
  if (!exists) {
    std::vector<std::string> names = dataset_names(file, location.file);
    std::string listing;
    for (std::size_t index = 0; index < names.size() && index < 12; ++index)
      listing += (index ? ", " : "") + names[index];
    if (names.size() > 12) listing += ", ... (" + std::to_string(names.size()) + " in all)";
    fail(location, key,
         "no such dataset (the file has: " + (listing.empty() ? "no datasets" : listing) + ")");
  }
  detail::Hdf5Handle access = detail::property_list_handle(H5Pcreate(H5P_DATASET_ACCESS));
  if (cache_bytes > 0 && access.valid()) {
    // HDF5 wants a prime number of hash slots, about 100 per chunk that fits.
    std::size_t slots = static_cast<std::size_t>(std::max<std::int64_t>(521, cache_bytes / 65536 * 100)) | 1;
    const auto is_prime = [](std::size_t value) {
      for (std::size_t divisor = 3; divisor * divisor <= value; divisor += 2)
        if (value % divisor == 0) return false;
      return true;
    };
    while (!is_prime(slots)) slots += 2;
    H5Pset_chunk_cache(access.get(), slots, static_cast<std::size_t>(cache_bytes), 1.0);
  }
  if (H5Oexists_by_name(file, location.dataset.c_str(), H5P_DEFAULT) <= 0)
    fail(location, key, "a link that leads nowhere (dangling link)");
  const std::optional<detail::ObjectFacts> object = detail::object_facts(file, location.dataset.c_str());
  if (!object || object->type != H5O_TYPE_DATASET)
    fail(location, key, "not a dataset (a group?); name the dataset itself");
  detail::check_object_header(file, location.dataset, location.file);
  detail::Hdf5Handle dataset = detail::dataset_handle(
      H5Dopen2(file, location.dataset.c_str(), access.valid() ? access.get() : H5P_DEFAULT));
  if (!dataset.valid()) fail(location, key, "cannot be opened (file corrupt?)");
  // Every read of a mapped source's dataset goes through here: checked once per open, not per read.
  if (const std::string problem = detail::dataset_storage_problem(dataset.get()); !problem.empty())
    fail(location, key, problem + " (file corrupt?)");
  // A sample is read whole: HDF5 builds its selection chunk by chunk, so a sample spread over
  // millions of chunks (chunks of a few values) took gigabytes and minutes to read one row.
  const std::uint64_t chunks = chunks_per_sample(dataset.get());
  if (chunks > maximum_chunks_per_sample)
    fail(location, key,
         "its chunks split one sample over " + std::to_string(chunks) + " chunks (at most " +
             std::to_string(maximum_chunks_per_sample) +
             " are read per sample); rechunk it, e.g. with h5repack -l CHUNK=1x... so a chunk holds "
             "whole samples");
  if (const std::string problem = detail::unwritten_storage_problem(dataset.get()); !problem.empty())
    fail(location, key, problem);
  return dataset;
}

std::uint64_t chunks_per_sample(hid_t dataset) {
  const std::vector<std::uint64_t> shape = dimensions(dataset);
  detail::Hdf5Handle creation = detail::property_list_handle(H5Dget_create_plist(dataset));
  if (shape.size() < 2 || !creation.valid() || H5Pget_layout(creation.get()) != H5D_CHUNKED) return 1;
  std::vector<hsize_t> chunk(shape.size());
  if (H5Pget_chunk(creation.get(), static_cast<int>(chunk.size()), chunk.data()) !=
      static_cast<int>(chunk.size()))
    return 1;
  std::uint64_t chunks = 1;
  for (std::size_t axis = 1; axis < shape.size(); ++axis) {
    if (chunk[axis] == 0) return 1;  // refused by the object-header check before this
    const std::uint64_t along = (shape[axis] + chunk[axis] - 1) / chunk[axis];
    if (__builtin_mul_overflow(chunks, along, &chunks)) return ~std::uint64_t{0};
  }
  return chunks;
}

std::vector<std::uint64_t> dimensions(hid_t dataset) {
  detail::Hdf5Handle space = detail::dataspace_handle(H5Dget_space(dataset));
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  std::vector<hsize_t> sizes(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), sizes.data(), nullptr);
  return {sizes.begin(), sizes.end()};
}

bool read_label_rows(hid_t dataset, const std::vector<std::uint64_t>& dimensions, std::int64_t first,
                     std::int64_t rows, std::vector<double>& values) {
  std::vector<hsize_t> start(dimensions.size(), 0), size(dimensions.begin(), dimensions.end());
  start[0] = static_cast<hsize_t>(first);
  size[0] = static_cast<hsize_t>(rows);
  std::size_t count = 1;
  for (const hsize_t extent : size) count *= static_cast<std::size_t>(extent);
  values.resize(count);
  detail::Hdf5Handle file_space = detail::dataspace_handle(H5Dget_space(dataset));
  detail::Hdf5Handle memory_space =
      detail::dataspace_handle(H5Screate_simple(static_cast<int>(size.size()), size.data(), nullptr));
  return file_space.valid() && memory_space.valid() &&
         H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, size.data(), nullptr) >=
             0 &&
         detail::read_checked(dataset, H5T_NATIVE_DOUBLE, memory_space.get(), file_space.get(), H5P_DEFAULT,
                              values.data()) >= 0;
}

std::int64_t one_hot_class(const double* row, std::int64_t width) {
  std::int64_t ones = 0, hot = -1;
  for (std::int64_t column = 0; column < width; ++column) {
    if (row[column] == 1.0) {
      ++ones;
      hot = column;
    } else if (row[column] != 0.0) {
      return -1;
    }
  }
  return ones == 1 ? hot : -1;
}

Storage storage(hid_t dataset) {
  Storage result;
  detail::Hdf5Handle creation = detail::property_list_handle(H5Dget_create_plist(dataset));
  if (!creation.valid()) return result;
  if (H5Pget_layout(creation.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(32, 0);
    const int rank = H5Pget_chunk(creation.get(), static_cast<int>(chunk.size()), chunk.data());
    if (rank > 0) result.chunk.assign(chunk.begin(), chunk.begin() + rank);
  }
  const int filters = H5Pget_nfilters(creation.get());
  for (int index = 0; index < filters; ++index) {
    unsigned flags = 0, values[8] = {0};
    std::size_t value_count = 8;
    char name[64] = {0};
    const H5Z_filter_t filter = H5Pget_filter2(creation.get(), static_cast<unsigned>(index), &flags,
                                               &value_count, values, sizeof name, name, nullptr);
    std::string text;
    switch (filter) {
      case H5Z_FILTER_DEFLATE: text = "gzip " + std::to_string(value_count ? values[0] : 0); break;
      case H5Z_FILTER_SHUFFLE: text = "shuffle"; break;
      case H5Z_FILTER_FLETCHER32: text = "fletcher32"; break;
      case H5Z_FILTER_SZIP: text = "szip"; break;
      case H5Z_FILTER_NBIT: text = "nbit"; break;
      case H5Z_FILTER_SCALEOFFSET: text = "scaleoffset"; break;
      case 32000: text = "lzf"; break;
      default: text = name[0] ? std::string(name) : "filter " + std::to_string(filter); break;
    }
    result.compression += (result.compression.empty() ? "" : "+") + text;
  }
  return result;
}

std::vector<std::string> read_strings(hid_t dataset, const config::DatasetLocation& location,
                                      const std::string& key) {
  detail::Hdf5Handle type = detail::datatype_handle(H5Dget_type(dataset));
  if (!type.valid() || H5Tget_class(type.get()) != H5T_STRING)
    fail(location, key,
         "expected strings (class names), got " + (type.valid() ? detail::describe_type(type.get()) : "?"));
  const std::vector<std::uint64_t> shape = dimensions(dataset);
  if (shape.size() != 1 || shape[0] == 0)
    fail(location, key,
         "expected a non-empty 1-D list of class names, got shape of " + std::to_string(shape.size()) +
             " dimensions");
  const auto count = static_cast<std::size_t>(shape[0]);
  std::vector<std::string> values;
  if (H5Tis_variable_str(type.get()) > 0) {
    detail::Hdf5Handle memory_type = detail::variable_string_type_for(type.get());
    std::vector<char*> pointers(count, nullptr);
    if (detail::read_checked(dataset, memory_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) < 0)
      fail(location, key, "cannot be read (file corrupt?)");
    for (char* pointer : pointers) values.emplace_back(pointer ? pointer : "");
    detail::Hdf5Handle space = detail::dataspace_handle(H5Dget_space(dataset));
    H5Dvlen_reclaim(memory_type.get(), space.get(), H5P_DEFAULT, pointers.data());
  } else {
    const std::size_t length = H5Tget_size(type.get());
    std::vector<char> buffer(count * length + 1, '\0');
    if (detail::read_checked(dataset, type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) < 0)
      fail(location, key, "cannot be read (file corrupt?)");
    values = detail::split_fixed_length_strings(buffer, count, length,
                                                H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD);
  }
  return values;
}

}  // namespace phalanx::data::mapped
