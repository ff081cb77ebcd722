// Writing the HDF5 dataset of docs/DESIGN.md §4, and the per-channel statistics stored with it. The file is
// written under a temporary name and renamed only once HDF5 has closed it cleanly, so a failed or
// interrupted import never leaves a half-written file where the trainer would look for it.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "channel_histogram.hpp"
#include "class_names.hpp"
#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "phalanx/data/hdf5_lock.hpp"

namespace phalanx::data {
namespace detail {
// lzf_filter.cpp: finds and registers the LZF plugin; empty, or why it is not usable.
std::string register_lzf_filter();
}  // namespace detail
namespace {

using detail::Hdf5Handle;

// HDF5 refuses chunks of 4 GiB or more; staying far below also keeps the chunk cache useful.
constexpr std::int64_t largest_chunk_bytes = std::int64_t{1} << 30;

[[noreturn]] void fail_input(const std::string& path, const std::string& what) {
  throw_input_error(path + ": " + what);
}

// A failed HDF5 call while writing is not the user's fault (disk full, I/O error): exit status 1,
// with the system's reason where HDF5 recorded one (the temporary file goes with its AtomicFile).
[[noreturn]] void write_failed(const std::string& path, const std::string& what) {
  std::string reason = detail::hdf5_system_reason();
  if (reason.empty()) throw_internal_error(path + ": " + what + " failed", __FILE__, __LINE__);
  reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
  throw_run_failure(path + ": " + reason + " (" + what + " failed; nothing was written)");
}

hid_t checked(hid_t id, const std::string& path, const std::string& what) {
  if (id < 0) write_failed(path, what);
  return id;
}

void checked_status(herr_t status, const std::string& path, const std::string& what) {
  if (status < 0) write_failed(path, what);
}

void validate_inputs(const std::string& path, const std::vector<std::string>& classes,
                     const std::vector<SplitStream>& splits, const WriteOptions& options) {
  if (classes.empty()) fail_input(path, "no class names given (at least one class is needed)");
  if (const std::string problem = class_names_problem(classes); !problem.empty()) fail_input(path, problem);
  if (options.chunk_samples < 1)
    fail_input(path, "chunk_samples = " + std::to_string(options.chunk_samples) + " must be at least 1");
  if (options.gzip_level < 0 || options.gzip_level > 9)
    fail_input(path, "gzip level " + std::to_string(options.gzip_level) + " is outside [0, 9]");
  if (options.lzf && options.gzip_level > 0) fail_input(path, "choose gzip or lzf compression, not both");

  const SplitStream* train = nullptr;
  bool has_test = false;
  for (std::size_t index = 0; index < splits.size(); ++index) {
    const SplitStream& split = splits[index];
    PHALANX_CHECK(static_cast<bool>(split.fill), "split ", split.name, " has no source");
    if (split.name != "train" && split.name != "test" && split.name != "val")
      fail_input(path, "split \"" + split.name + "\" is not one of train, test, val");
    for (std::size_t other = 0; other < index; ++other)
      if (splits[other].name == split.name) fail_input(path, "split \"" + split.name + "\" given twice");
    if (split.count < 1) fail_input(path, "split \"" + split.name + "\" has no samples");
    if (split.height < 1 || split.width < 1 || split.channels < 1)
      fail_input(path, "split \"" + split.name + "\" has an empty sample shape " +
                           std::to_string(split.height) + "x" + std::to_string(split.width) + "x" +
                           std::to_string(split.channels));
    if (split.name == "train") train = &split;
    if (split.name == "test") has_test = true;
  }
  if (!train) fail_input(path, "no \"train\" split to write (mean and std come from it)");
  if (!has_test) fail_input(path, "no \"test\" split to write");
  for (const SplitStream& split : splits)
    if (split.height != train->height || split.width != train->width || split.channels != train->channels)
      fail_input(path, "split \"" + split.name + "\" has samples of a different shape than \"train\"");
}

// Labels are checked slab by slab as they arrive; `first` numbers them within the split.
void check_labels(const std::string& path, const std::string& split_name, const std::int32_t* labels,
                  std::int64_t first, std::int64_t count, std::size_t class_count) {
  for (std::int64_t sample = 0; sample < count; ++sample) {
    const std::int32_t label = labels[sample];
    if (label < 0 || static_cast<std::size_t>(label) >= class_count)
      fail_input(path, "split \"" + split_name + "\": label[" + std::to_string(first + sample) +
                           "] = " + std::to_string(label) + " is outside [0, " + std::to_string(class_count) +
                           ") (" + std::to_string(class_count) + " classes)");
  }
}

void write_string_attribute(hid_t object, const char* name, const std::string& value,
                            const std::string& path) {
  Hdf5Handle type = detail::variable_string_type();
  Hdf5Handle space = detail::dataspace_handle(checked(H5Screate(H5S_SCALAR), path, "creating a dataspace"));
  Hdf5Handle attribute = detail::attribute_handle(
      checked(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), path,
              std::string("creating attribute ") + name));
  const char* text = value.c_str();
  checked_status(H5Awrite(attribute.get(), type.get(), &text), path,
                 std::string("writing attribute ") + name);
}

void write_string_array_attribute(hid_t object, const char* name, const std::vector<std::string>& values,
                                  const std::string& path) {
  Hdf5Handle type = detail::variable_string_type();
  const hsize_t count = values.size();
  Hdf5Handle space =
      detail::dataspace_handle(checked(H5Screate_simple(1, &count, nullptr), path, "creating a dataspace"));
  Hdf5Handle attribute = detail::attribute_handle(
      checked(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), path,
              std::string("creating attribute ") + name));
  std::vector<const char*> texts;
  for (const auto& value : values) texts.push_back(value.c_str());
  checked_status(H5Awrite(attribute.get(), type.get(), texts.data()), path,
                 std::string("writing attribute ") + name);
}

void write_integer_attribute(hid_t object, const char* name, int value, const std::string& path) {
  Hdf5Handle space = detail::dataspace_handle(checked(H5Screate(H5S_SCALAR), path, "creating a dataspace"));
  Hdf5Handle attribute = detail::attribute_handle(
      checked(H5Acreate2(object, name, H5T_STD_I32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), path,
              std::string("creating attribute ") + name));
  checked_status(H5Awrite(attribute.get(), H5T_NATIVE_INT, &value), path,
                 std::string("writing attribute ") + name);
}

void write_float_array_attribute(hid_t object, const char* name, const std::vector<float>& values,
                                 const std::string& path) {
  const hsize_t count = values.size();
  Hdf5Handle space =
      detail::dataspace_handle(checked(H5Screate_simple(1, &count, nullptr), path, "creating a dataspace"));
  Hdf5Handle attribute = detail::attribute_handle(
      checked(H5Acreate2(object, name, H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), path,
              std::string("creating attribute ") + name));
  checked_status(H5Awrite(attribute.get(), H5T_NATIVE_FLOAT, values.data()), path,
                 std::string("writing attribute ") + name);
}

// Creates a dataset chunked along its first axis, `chunk_samples` samples per chunk.
// The samples per chunk of a dataset of `count` samples of `sample_bytes` each.
std::int64_t chunk_samples_for(const WriteOptions& options, std::int64_t count, std::int64_t sample_bytes) {
  const std::int64_t chunk_samples = std::min<std::int64_t>(options.chunk_samples, count);
  return std::max<std::int64_t>(1, std::min(chunk_samples, largest_chunk_bytes / sample_bytes));
}

Hdf5Handle create_chunked_dataset(hid_t group, const char* name, hid_t file_type,
                                  const std::vector<hsize_t>& dimensions, std::int64_t sample_bytes,
                                  const WriteOptions& options, const std::string& path,
                                  const std::string& dataset_name) {
  const std::int64_t chunk_samples =
      chunk_samples_for(options, static_cast<std::int64_t>(dimensions[0]), sample_bytes);
  std::vector<hsize_t> chunk = dimensions;
  chunk[0] = static_cast<hsize_t>(chunk_samples);

  Hdf5Handle properties = detail::property_list_handle(
      checked(H5Pcreate(H5P_DATASET_CREATE), path, "creating dataset properties"));
  checked_status(H5Pset_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data()), path,
                 "chunking " + dataset_name);
  // Every byte is written right away, so pre-filling chunks with zeros would only cost time.
  checked_status(H5Pset_fill_time(properties.get(), H5D_FILL_TIME_NEVER), path, "setting fill time");
  if (options.gzip_level > 0) {
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0)
      throw_input_error(path + ": gzip compression was asked for but this HDF5 library lacks it");
    checked_status(H5Pset_deflate(properties.get(), static_cast<unsigned>(options.gzip_level)), path,
                   "enabling gzip for " + dataset_name);
  }
  if (options.lzf) {
    if (const std::string problem = detail::register_lzf_filter(); !problem.empty())
      throw_input_error(path + ": lzf compression was asked for but HDF5 has no usable LZF filter plugin (" +
                        problem + "); install a working one or point HDF5_PLUGIN_PATH at it");
    checked_status(H5Pset_filter(properties.get(), static_cast<H5Z_filter_t>(lzf_filter_id),
                                 H5Z_FLAG_MANDATORY, 0, nullptr),
                   path, "enabling lzf for " + dataset_name);
  }
  // A Fletcher-32 checksum per chunk, last in the pipeline so it covers the stored bytes: a chunk
  // damaged after the import fails its read, naming its samples, where the whole-dataset checksum
  // could tell only that something in the dataset changed (and a streaming run never reads it all).
  checked_status(H5Pset_fletcher32(properties.get()), path, "enabling checksums for " + dataset_name);
  Hdf5Handle space = detail::dataspace_handle(
      checked(H5Screate_simple(static_cast<int>(dimensions.size()), dimensions.data(), nullptr), path,
              "creating a dataspace"));
  return detail::dataset_handle(
      checked(H5Dcreate2(group, name, file_type, space.get(), H5P_DEFAULT, properties.get(), H5P_DEFAULT),
              path, "creating " + dataset_name));
}

// Samples per slab: whole chunks (so each is compressed and written once, straight through the
// filters), at least 256 samples where the split has them, so a slab gives an importer's decoding
// threads enough to share, but no more than 256 MiB unless one chunk is larger.
constexpr std::int64_t largest_slab_bytes = std::int64_t{256} << 20;
std::int64_t slab_samples(std::int64_t chunk_samples, std::int64_t count, std::int64_t sample_bytes) {
  const std::int64_t wanted = std::max<std::int64_t>(1, (256 + chunk_samples - 1) / chunk_samples);
  const std::int64_t affordable =
      std::max<std::int64_t>(1, largest_slab_bytes / (chunk_samples * sample_bytes));
  return std::min(count, chunk_samples * std::min(wanted, affordable));
}

// Writes one split, a slab at a time; the train split's pixels also go into `histogram`, whose mean
// and std are stored with its images.
void write_split(hid_t file, const SplitStream& split, std::size_t class_count, const WriteOptions& options,
                 bool is_train, const std::string& path) {
  const std::string group_name = "/" + split.name;
  Hdf5Handle group = detail::group_handle(
      checked(H5Gcreate2(file, split.name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path,
              "creating " + group_name));

  const std::vector<hsize_t> image_dimensions{
      static_cast<hsize_t>(split.count), static_cast<hsize_t>(split.height),
      static_cast<hsize_t>(split.width), static_cast<hsize_t>(split.channels)};
  Hdf5Handle images = create_chunked_dataset(group.get(), "images", H5T_STD_U8LE, image_dimensions,
                                             split.image_bytes(), options, path, group_name + "/images");
  Hdf5Handle image_space = detail::dataspace_handle(
      checked(H5Dget_space(images.get()), path, "reading the dataspace of " + group_name + "/images"));
  const std::int64_t slab = slab_samples(chunk_samples_for(options, split.count, split.image_bytes()),
                                         split.count, split.image_bytes());
  const auto slab_bytes = static_cast<std::size_t>(slab * split.image_bytes());
  // Two slab buffers where the source may fill one while the other is written: only where there
  // is more than one slab, and not when a slab is one chunk over the cap (two would double it).
  const bool beside = split.fill_beside_writes && slab < split.count &&
                      slab_bytes <= static_cast<std::size_t>(largest_slab_bytes);
  std::vector<std::uint8_t> pixels[2] = {std::vector<std::uint8_t>(slab_bytes),
                                         std::vector<std::uint8_t>(beside ? slab_bytes : 0)};
  std::vector<std::int32_t> labels(static_cast<std::size_t>(split.count));
  const auto fill = [&](int buffer, std::int64_t first) {
    split.fill(first, std::min(slab, split.count - first), pixels[buffer].data(), labels.data() + first);
  };
  // Declared after the buffers it fills, so that an error while writing waits for it (a std::async
  // future joins when destroyed) before they go.
  std::future<void> next_slab;
  // Hashed from the bytes in memory rather than read back: it records what the importer meant to
  // write, so `inspect --verify` also catches a write that went wrong on the way to the disk.
  Xxhash64Stream image_hash;
  ChannelHistogram histogram(split.channels);
  int buffer = 0;
  if (beside) next_slab = std::async(std::launch::async, fill, 0, std::int64_t{0});
  for (std::int64_t first = 0; first < split.count; first += slab) {
    const std::int64_t count = std::min(slab, split.count - first);
    if (beside) {
      next_slab.get();  // rethrows what the source threw
      buffer = static_cast<int>((first / slab) % 2);
      if (first + slab < split.count)
        next_slab = std::async(std::launch::async, fill, 1 - buffer, first + slab);
    } else {
      fill(0, first);
    }
    const std::uint8_t* slab_pixels = pixels[buffer].data();
    const std::int32_t* slab_labels = labels.data() + first;
    check_labels(path, split.name, slab_labels, first, count, class_count);
    const auto bytes = static_cast<std::size_t>(count * split.image_bytes());
    image_hash.update(slab_pixels, bytes);
    if (is_train) histogram.add(slab_pixels, bytes / static_cast<std::size_t>(split.channels));
    const hsize_t start[4] = {static_cast<hsize_t>(first), 0, 0, 0};
    const hsize_t extent[4] = {static_cast<hsize_t>(count), image_dimensions[1], image_dimensions[2],
                               image_dimensions[3]};
    checked_status(H5Sselect_hyperslab(image_space.get(), H5S_SELECT_SET, start, nullptr, extent, nullptr),
                   path, "selecting samples of " + group_name + "/images");
    Hdf5Handle memory_space =
        detail::dataspace_handle(checked(H5Screate_simple(4, extent, nullptr), path, "creating a dataspace"));
    checked_status(H5Dwrite(images.get(), H5T_NATIVE_UINT8, memory_space.get(), image_space.get(),
                            H5P_DEFAULT, slab_pixels),
                   path, "writing " + group_name + "/images");
  }
  write_string_attribute(images.get(), checksum_attribute, format_checksum(image_hash.digest()), path);
  if (is_train) {
    std::vector<float> mean, standard_deviation;
    histogram.statistics(mean, standard_deviation);
    for (std::size_t channel = 0; channel < standard_deviation.size(); ++channel)
      if (!(standard_deviation[channel] > 0.0f))
        fail_input(path, "channel " + std::to_string(channel) +
                             " of the train images has the same value in every pixel (std = 0): nothing to "
                             "normalise");
    write_float_array_attribute(images.get(), "mean", mean, path);
    write_float_array_attribute(images.get(), "std", standard_deviation, path);
  }

  Hdf5Handle label_dataset =
      create_chunked_dataset(group.get(), "labels", H5T_STD_I32LE, {static_cast<hsize_t>(split.count)},
                             sizeof(std::int32_t), options, path, group_name + "/labels");
  checked_status(
      H5Dwrite(label_dataset.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data()), path,
      "writing " + group_name + "/labels");
  write_string_attribute(label_dataset.get(), checksum_attribute, checksum_text(labels), path);
}

void write_file(const std::string& temporary_path, const std::string& path,
                const std::vector<std::string>& classes, const std::vector<SplitStream>& splits,
                const WriteOptions& options) {
  Hdf5Handle file =
      detail::file_handle(H5Fcreate(temporary_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  if (!file.valid()) fail_input(path, "cannot create " + temporary_path + " (is the folder writable?)");
  write_string_attribute(file.get(), "format", dataset_format, path);
  write_integer_attribute(file.get(), "version", dataset_version, path);
  write_string_array_attribute(file.get(), "classes", classes, path);
  // The schema lists splits as train, test, val; writing them in that order keeps h5dump readable
  // (and a train split with nothing to normalise stops the write before the other splits).
  for (const char* name : {"train", "test", "val"})
    for (const SplitStream& split : splits)
      if (split.name == name)
        write_split(file.get(), split, classes.size(), options, split.name == "train", path);
  if (!file.close())
    throw_internal_error(path + ": closing (flushing) " + temporary_path + " failed", __FILE__, __LINE__);
}

}  // namespace

void channel_statistics(const Split& split, std::vector<float>& mean,
                        std::vector<float>& standard_deviation) {
  PHALANX_CHECK(split.channels >= 1 && split.count >= 1, "split ", split.name, " is empty");
  PHALANX_CHECK(split.images.size() == static_cast<std::size_t>(split.count * split.image_bytes()));
  ChannelHistogram histogram(split.channels);
  histogram.add(split.images.data(), split.images.size() / static_cast<std::size_t>(split.channels));
  histogram.statistics(mean, standard_deviation);
}

void write_dataset_in_slabs(const std::string& path, const std::vector<std::string>& classes,
                            const std::vector<SplitStream>& splits, const WriteOptions& options) {
  detail::silence_hdf5_error_printing();
  const auto hdf5_lock = lock_hdf5();
  validate_inputs(path, classes, splits, options);

  AtomicFile file(path);
  write_file(file.temporary_path(), path, classes, splits, options);
  file.commit();
}

void write_dataset(const std::string& path, const std::vector<std::string>& classes,
                   const std::vector<const Split*>& splits, const WriteOptions& options) {
  std::vector<SplitStream> streams;
  for (std::size_t index = 0; index < splits.size(); ++index) {
    const Split* split = splits[index];
    PHALANX_CHECK(split != nullptr, "split ", index, " is null");
    streams.push_back(SplitStream{
        split->name, split->count, split->height, split->width, split->channels,
        [split](std::int64_t first, std::int64_t count, std::uint8_t* images, std::int32_t* labels) {
          const auto sample_bytes = static_cast<std::size_t>(split->image_bytes());
          std::copy_n(split->images.begin() + static_cast<std::ptrdiff_t>(first) * split->image_bytes(),
                      static_cast<std::size_t>(count) * sample_bytes, images);
          std::copy_n(split->labels.begin() + first, count, labels);
        }});
  }
  // Whole splits are checked before a file is started, labels included, as they always were (the
  // slab writer can check labels only as they arrive).
  validate_inputs(path, classes, streams, options);
  for (const Split* split : splits) {
    PHALANX_CHECK(split->images.size() == static_cast<std::size_t>(split->count * split->image_bytes()),
                  "split ", split->name, " holds ", split->images.size(), " image bytes for ", split->count,
                  " samples of ", split->image_bytes());
    PHALANX_CHECK(split->labels.size() == static_cast<std::size_t>(split->count), "split ", split->name,
                  " holds ", split->labels.size(), " labels for ", split->count, " samples");
    check_labels(path, split->name, split->labels.data(), 0, split->count, classes.size());
  }
  write_dataset_in_slabs(path, classes, streams, options);
}

}  // namespace phalanx::data
