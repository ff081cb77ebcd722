// Opening and validating a data.source mapping. Everything that can be checked without reading
// every image is checked here, once, before training starts: a user with a wrong key or a file of
// another layout reads one message naming the file, the dataset and the key, not a crash hours in.
#include "mapped_source.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "class_names.hpp"
#include "mapped_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/checked_chunk_decoding.hpp"
#include "phalanx/data/hdf5_lock.hpp"
#include "phalanx/data/split_range_reader.hpp"
#include "split_carving.hpp"

namespace phalanx::data {
namespace {

using config::DatasetLocation;

// Images sampled (spread evenly over a split) to tell [0, 1] floats from [0, 255] ones.
constexpr std::int64_t scale_sample_images = 64;
// A chunk band (the bytes HDF5 must read for one sample's chunk) above this is worth a warning:
// the streaming cache holds two windows of whole chunks and random access decodes a whole band.
constexpr std::int64_t large_chunk_band_bytes = std::int64_t{64} << 20;
// Classes phalanx names itself ("class_0", ...) from the largest label; ImageNet-21k has 21,841.
constexpr auto maximum_inferred_classes = static_cast<std::int64_t>(maximum_one_hot_classes);

std::string format_value(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// What one pass over a split's labels found.
struct LabelScan {
  std::int64_t inferred_count = 0;  // largest index label in [0, 1e9) + 1; one-hot: the width
  std::int64_t first_wrong_row = -1;
  // What is wrong with that row, but for an index outside the range, which needs the class count:
  // then `first_wrong_outside` holds the label and the message is made once the count is known.
  std::string first_wrong_message;
  std::optional<double> first_wrong_outside;
  std::vector<std::int32_t> classes;  // each row's class, where asked for (carving)
};

// Everything read from one split's files before the class count is known.
struct PendingSplit {
  std::string name;
  config::SourceSplitConfig locations;
  std::string images_key, labels_key;
  ImageShape image;
  std::vector<std::uint64_t> image_dimensions;
  bool float_pixels = false;
  std::string dtype;
  mapped::Storage storage;
  PixelScale scale = PixelScale::Bytes;
  std::string scale_evidence;
  LabelShape labels;
  std::vector<std::uint64_t> label_dimensions;
  std::int64_t label_chunk_bytes = 0;
  std::int64_t label_chunk_rows = 0;  // 0: the labels are not chunked
};

// Opens a split's labels and reads their shape: the values are read by scan_labels.
void open_labels(hid_t file, const DatasetLocation& location, const std::string& key,
                 config::LabelEncoding requested, PendingSplit& split) {
  detail::Hdf5Handle dataset = mapped::open_dataset(file, location, key);
  detail::Hdf5Handle type = detail::datatype_handle(H5Dget_type(dataset.get()));
  const H5T_class_t type_class = type.valid() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
  if (type_class != H5T_INTEGER && type_class != H5T_FLOAT)
    mapped::fail(location, key,
                 "dtype " + (type.valid() ? detail::describe_type(type.get()) : "?") +
                     " cannot be labels (expected integers, integer-valued floats or one-hot rows)");
  split.label_dimensions = mapped::dimensions(dataset.get());
  if (const mapped::Storage stored = mapped::storage(dataset.get()); !stored.chunk.empty()) {
    std::int64_t values = 1;
    for (const std::uint64_t extent : stored.chunk) values *= static_cast<std::int64_t>(extent);
    split.label_chunk_bytes = values * static_cast<std::int64_t>(type.valid() ? H5Tget_size(type.get()) : 8);
    split.label_chunk_rows = static_cast<std::int64_t>(stored.chunk[0]);
  }
  split.labels = label_shape(split.label_dimensions, requested);
  if (!split.labels.error.empty()) mapped::fail(location, key, split.labels.error);
}

// The refusal of a label past the classes, alike whether the pass knew the count or learnt it after.
std::string label_outside(std::int64_t row, double value, std::int64_t class_count) {
  return "label " + std::to_string(row) + " = " + format_value(value) + " is outside [0, " +
         std::to_string(class_count) + ") (" + std::to_string(class_count) + " classes)";
}

// One pass over a split's labels, block by block (whole chunks, each block in its own shape: into
// a flat memory space HDF5 read a one-hot file 8x slower), checking every row in row order. With
// the class count known, the first wrong row is refused at once; without it (phalanx numbers the
// classes itself) the pass finds the largest label and keeps the first wrong row for later.
LabelScan scan_labels(const PendingSplit& split, std::optional<std::int64_t> class_count, bool keep_classes) {
  const auto& location = split.locations.labels;
  const std::string& key = split.labels_key;
  const auto hdf5_lock = lock_hdf5();
  detail::silence_hdf5_error_printing();
  detail::Hdf5Handle file = mapped::open_file(location.file, key);
  detail::Hdf5Handle dataset = mapped::open_dataset(file.get(), location, key);
  LabelScan scan;
  const LabelShape& shape = split.labels;
  const bool one_hot = shape.encoding == LabelEncoding::OneHot;
  const std::int64_t width = std::max<std::int64_t>(1, shape.classes);
  if (one_hot) scan.inferred_count = shape.classes;
  if (keep_classes) scan.classes.resize(static_cast<std::size_t>(shape.count));
  if (one_hot && shape.classes == 0 && shape.count > 0) {  // rows of no values: none is one-hot
    scan.first_wrong_row = 0;
    scan.first_wrong_message = "row 0 is not one-hot ([]: needs exactly one 1, the rest 0)";
    if (class_count) mapped::fail(location, key, scan.first_wrong_message);
    return scan;
  }
  const auto wrong = [&](std::int64_t row, std::string message, std::optional<double> outside) {
    if (class_count) {
      if (outside) message = label_outside(row, *outside, *class_count);
      mapped::fail(location, key, message);
    }
    if (scan.first_wrong_row < 0) {
      scan.first_wrong_row = row;
      scan.first_wrong_message = std::move(message);
      scan.first_wrong_outside = outside;
    }
  };

  // Whole chunks per block where the labels are chunked: a block that ends inside a chunk would
  // have HDF5 read and decode that chunk again for the next one.
  std::int64_t block_rows = std::max<std::int64_t>(1, label_block_values / width);
  if (split.label_chunk_rows > 0)
    block_rows = std::max<std::int64_t>(1, block_rows / split.label_chunk_rows) * split.label_chunk_rows;
  std::vector<double> values;
  for (std::int64_t first = 0; first < shape.count; first += block_rows) {
    const std::int64_t rows = std::min(block_rows, shape.count - first);
    if (!mapped::read_label_rows(dataset.get(), split.label_dimensions, first, rows, values))
      mapped::fail(location, key,
                   "rows " + std::to_string(first) + " to " + std::to_string(first + rows - 1) +
                       ": cannot read the data (" + detail::read_failure_reason() + ")");
    for (std::int64_t index = 0; index < rows; ++index) {
      const std::int64_t row = first + index;
      std::int32_t label = -1;
      if (one_hot) {
        const double* row_values = values.data() + index * width;
        const std::int64_t hot = mapped::one_hot_class(row_values, width);
        if (hot >= 0) {
          label = static_cast<std::int32_t>(hot);
        } else if (scan.first_wrong_row < 0) {
          std::string shown;
          for (std::int64_t column = 0; column < width; ++column) {
            if (column) shown += ',';
            shown += format_value(row_values[column]);
          }
          wrong(row,
                "row " + std::to_string(row) + " is not one-hot ([" + shown +
                    "]: needs exactly one 1, the rest 0)",
                std::nullopt);
        }
      } else {
        const double value = values[static_cast<std::size_t>(index)];
        // As before labels were decoded in blocks: the classes phalanx would name itself count
        // every value in [0, 1e9), whole or not.
        if (value >= 0 && value < 1e9)
          scan.inferred_count = std::max(scan.inferred_count, static_cast<std::int64_t>(value) + 1);
        if (!(value == std::floor(value)))
          wrong(row, "label " + std::to_string(row) + " = " + format_value(value) + " is not a whole number",
                std::nullopt);
        else if (value < 0 || value >= 1e9 || (class_count && value >= static_cast<double>(*class_count)))
          wrong(row, "", value);
        else
          label = static_cast<std::int32_t>(value);
      }
      if (keep_classes) scan.classes[static_cast<std::size_t>(row)] = label;
    }
  }
  return scan;
}

// Reads `rows` whole samples (as float) spread over the split and decides how values map to bytes.
void decide_scale(hid_t dataset, PendingSplit& split) {
  const auto& location = split.locations.images;
  const std::int64_t count = split.image.count;
  const std::int64_t sample_count = std::min(count, scale_sample_images);
  std::size_t row_values = 1;
  for (std::size_t axis = 1; axis < split.image_dimensions.size(); ++axis)
    row_values *= static_cast<std::size_t>(split.image_dimensions[axis]);
  std::vector<float> row(row_values);
  detail::Hdf5Handle file_space = detail::dataspace_handle(H5Dget_space(dataset));
  std::vector<hsize_t> start(split.image_dimensions.size(), 0),
      size(split.image_dimensions.begin(), split.image_dimensions.end());
  size[0] = 1;
  detail::Hdf5Handle memory_space =
      detail::dataspace_handle(H5Screate_simple(static_cast<int>(size.size()), size.data(), nullptr));
  float largest = 0.0f;
  for (std::int64_t draw = 0; draw < sample_count; ++draw) {
    // In 128 bits: a dataset may declare up to 2^64 samples, and draw * (count - 1) overflowed
    // 64 (found by the mapped_source fuzzer: a sample index read back negative).
    const auto sample = static_cast<std::int64_t>(
        sample_count > 1 ? static_cast<__int128>(draw) * (count - 1) / (sample_count - 1) : 0);
    start[0] = static_cast<hsize_t>(sample);
    if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, size.data(), nullptr) <
            0 ||
        detail::read_checked(dataset, H5T_NATIVE_FLOAT, memory_space.get(), file_space.get(), H5P_DEFAULT,
                             row.data()) < 0)
      mapped::fail(location, split.images_key,
                   "sample " + std::to_string(sample) + ": cannot read the data (" +
                       detail::read_failure_reason() + ")");
    for (const float value : row) {
      if (!std::isfinite(value) || value < 0.0f || value > 255.0f)
        mapped::fail(location, split.images_key,
                     "sample " + std::to_string(sample) + " has the value " + format_value(value) +
                         ", outside both [0, 1] and [0, 255] (float images must be in one of them)");
      largest = std::max(largest, value);
    }
  }
  split.scale = largest <= 1.0f ? PixelScale::Unit : PixelScale::ByteRange;
  split.scale_evidence = split.dtype + " images, largest value " + format_value(largest) +
                         " in a sample of " + std::to_string(sample_count) + ": read as [0, " +
                         (split.scale == PixelScale::Unit ? "1], scaled by 255" : "255]");
}

PendingSplit open_split(const std::string& name, const config::SourceSplitConfig& locations,
                        const config::SourceConfig& source) {
  PendingSplit split;
  split.name = name;
  split.locations = locations;
  split.images_key = "data.source." + name + ".images";
  split.labels_key = "data.source." + name + ".labels";
  const auto hdf5_lock = lock_hdf5();
  detail::silence_hdf5_error_printing();
  {
    detail::Hdf5Handle file = mapped::open_file(locations.images.file, split.images_key);
    detail::Hdf5Handle dataset = mapped::open_dataset(file.get(), locations.images, split.images_key);
    detail::Hdf5Handle type = detail::datatype_handle(H5Dget_type(dataset.get()));
    split.dtype = type.valid() ? detail::describe_type(type.get()) : "?";
    split.float_pixels = type.valid() && H5Tget_class(type.get()) == H5T_FLOAT;
    if (!split.float_pixels && !(type.valid() && detail::is_integer_type(type.get(), 1, H5T_SGN_NONE)))
      mapped::fail(
          locations.images, split.images_key,
          "dtype " + split.dtype + " cannot be images (expected uint8, or float in [0, 1] or [0, 255])");
    split.image_dimensions = mapped::dimensions(dataset.get());
    split.image = image_shape(split.image_dimensions, source.layout);
    if (!split.image.error.empty()) mapped::fail(locations.images, split.images_key, split.image.error);
    split.storage = mapped::storage(dataset.get());
    if (split.float_pixels) decide_scale(dataset.get(), split);
  }
  detail::Hdf5Handle label_file = mapped::open_file(locations.labels.file, split.labels_key);
  open_labels(label_file.get(), locations.labels, split.labels_key, source.labels, split);
  if (split.labels.count != split.image.count)
    mapped::fail(locations.labels, split.labels_key,
                 "has " + std::to_string(split.labels.count) + " labels but " + locations.images.text() +
                     " (" + split.images_key + ") has " + std::to_string(split.image.count) + " images");
  return split;
}

std::vector<std::string> read_class_dataset(const DatasetLocation& location) {
  const std::string key = "data.source.classes";
  const auto hdf5_lock = lock_hdf5();
  detail::silence_hdf5_error_printing();
  detail::Hdf5Handle file = mapped::open_file(location.file, key);
  detail::Hdf5Handle dataset = mapped::open_dataset(file.get(), location, key);
  std::vector<std::string> names = mapped::read_strings(dataset.get(), location, key);
  if (const std::string problem = class_names_problem(names); !problem.empty())
    mapped::fail(location, key, problem);
  return names;
}

// A split of one-hot rows must be as wide as there are classes.
void check_one_hot_width(const PendingSplit& split, std::int64_t class_count) {
  if (split.labels.encoding == LabelEncoding::OneHot && split.labels.classes != class_count)
    mapped::fail(split.locations.labels, split.labels_key,
                 "one-hot rows of " + std::to_string(split.labels.classes) + " values, but there are " +
                     std::to_string(class_count) + " classes (data.source.classes)");
}

// The first wrong row a pass without the class count kept, now that the count is known.
void refuse_first_wrong_row(const PendingSplit& split, const LabelScan& scan, std::int64_t class_count) {
  if (scan.first_wrong_row < 0) return;
  if (scan.first_wrong_outside)
    mapped::fail(split.locations.labels, split.labels_key,
                 label_outside(scan.first_wrong_row, *scan.first_wrong_outside, class_count));
  mapped::fail(split.locations.labels, split.labels_key, scan.first_wrong_message);
}

}  // namespace

std::string file_identity(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  const auto time = std::filesystem::last_write_time(path, error);
  return path + "#" + std::to_string(error ? 0 : size) + "@" +
         std::to_string(error ? 0 : time.time_since_epoch().count());
}

MappedSource::MappedSource(const config::SourceConfig& source) {
  PHALANX_CHECK(source.enabled(), "data.source is not set");
  std::vector<PendingSplit> pending;
  pending.push_back(open_split("train", source.train, source));
  if (!source.test.empty()) pending.push_back(open_split("test", source.test, source));
  if (!source.val.empty()) pending.push_back(open_split("val", source.val, source));

  // The class count: named classes, else the width of one-hot rows, else the largest index + 1
  // (a pass over every label). Carving needs train's classes, kept by its pass.
  const bool carving = source.val_fraction > 0 || source.test_fraction > 0;
  const bool named = !source.classes.empty() || !source.classes_dataset.empty();
  std::vector<LabelScan> scans(pending.size());
  if (!source.classes.empty()) {
    info_.classes = source.classes;
  } else if (!source.classes_dataset.empty()) {
    info_.classes = read_class_dataset(source.classes_dataset);
  } else {
    std::int64_t count = 0;
    const PendingSplit* widest = nullptr;
    for (std::size_t index = 0; index < pending.size(); ++index) {
      scans[index] = scan_labels(pending[index], std::nullopt, carving && index == 0);
      const std::int64_t before = count;
      count = std::max(count, scans[index].inferred_count);
      if (count > before) widest = &pending[index];
    }
    // Each class gets a name (reports, predictions): a damaged label of 159,383,811 made phalanx
    // build that many names (found by the mapped_source fuzzer). More classes than this need names.
    if (count > maximum_inferred_classes)
      mapped::fail(widest->locations.labels, widest->labels_key,
                   "its labels imply " + std::to_string(count) + " classes, more than the " +
                       std::to_string(maximum_inferred_classes) +
                       " phalanx numbers itself: name them (data.source.classes or "
                       "data.source.classes_dataset), or check the labels");
    for (std::int64_t index = 0; index < count; ++index)
      info_.classes.push_back("class_" + std::to_string(index));
  }
  const auto class_count = static_cast<std::int64_t>(info_.classes.size());

  const PendingSplit& train = pending.front();
  for (const auto& split : pending)
    if (split.image.height != train.image.height || split.image.width != train.image.width ||
        split.image.channels != train.image.channels)
      mapped::fail(split.locations.images, split.images_key,
                   "images of " + std::to_string(split.image.height) + "x" +
                       std::to_string(split.image.width) + "x" + std::to_string(split.image.channels) +
                       " (HxWxC) but " + train.locations.images.text() + " has " +
                       std::to_string(train.image.height) + "x" + std::to_string(train.image.width) + "x" +
                       std::to_string(train.image.channels));

  // Every label in row order, split by split: with named classes in one pass now, else the first
  // wrong row the pass above kept.
  for (std::size_t index = 0; index < pending.size(); ++index) {
    check_one_hot_width(pending[index], class_count);
    if (named)
      scans[index] = scan_labels(pending[index], class_count, carving && index == 0);
    else
      refuse_first_wrong_row(pending[index], scans[index], class_count);
  }

  std::string description;
  for (auto& split : pending) {
    MappedSplit mapped_split;
    mapped_split.info = {split.name, split.image.count, split.image.height, split.image.width,
                         split.image.channels};
    mapped_split.images = split.locations.images;
    mapped_split.images_key = split.images_key;
    mapped_split.layout = split.image.layout;
    mapped_split.image_dimensions = split.image_dimensions;
    mapped_split.scale = split.float_pixels ? split.scale : PixelScale::Bytes;
    mapped_split.scale_evidence = split.scale_evidence;
    mapped_split.labels_location = split.locations.labels;
    mapped_split.labels_key = split.labels_key;
    mapped_split.label_encoding = split.labels.encoding;
    mapped_split.label_dimensions = split.label_dimensions;
    mapped_split.label_chunk_bytes = split.label_chunk_bytes;
    std::int64_t sample_values = 1;
    for (std::size_t axis = 1; axis < split.image_dimensions.size(); ++axis)
      sample_values *= static_cast<std::int64_t>(split.image_dimensions[axis]);
    const std::int64_t element_bytes = split.float_pixels ? 4 : 1;
    if (!split.storage.chunk.empty()) {
      mapped_split.chunk_rows = static_cast<std::int64_t>(split.storage.chunk[0]);
    } else {
      mapped_split.chunk_rows = std::max<std::int64_t>(
          1, SplitRangeReader::contiguous_read_bytes / (sample_values * element_bytes));
    }
    mapped_split.chunk_band_bytes = mapped_split.chunk_rows * sample_values * element_bytes;
    if (!split.storage.chunk.empty() && mapped_split.chunk_band_bytes > large_chunk_band_bytes)
      warnings_.push_back(
          split.locations.images.text() + " (" + split.images_key + "): stored in chunks of " +
          std::to_string(mapped_split.chunk_rows) + " samples" +
          (split.storage.compression.empty() ? "" : " (" + split.storage.compression + ")") +
          ": reading any sample reads " + std::to_string(mapped_split.chunk_band_bytes >> 20) +
          " MiB, far more than a batch needs; data.cache none holds about two windows of whole chunks. "
          "'phalanx data import-hdf5 --chunk 1024' makes a copy chunked for phalanx");
    description += (description.empty() ? "" : "; ") + split.name + " " + split.locations.images.text() +
                   " " + split.dtype + " " + dimensions_text(split.image_dimensions) + " as " +
                   layout_name(split.image.layout) + ", labels " + label_encoding_name(split.labels.encoding);
    if (split.float_pixels) description += " (" + split.scale_evidence + ")";
    splits_.push_back(std::move(mapped_split));
  }

  // Carve val and test from train, by class, when the files have none.
  if (source.val_fraction > 0 || source.test_fraction > 0) {
    MappedSplit& whole = splits_.front();
    const std::vector<std::int32_t> classes = std::move(scans.front().classes);
    const CarvedRows carved =
        carve_stratified(classes, source.val_fraction, source.test_fraction, source.split_seed);
    const auto part = [&](const std::string& name, const std::vector<std::int64_t>& rows) {
      MappedSplit split = whole;
      split.info.name = name;
      split.info.count = static_cast<std::int64_t>(rows.size());
      split.rows = rows;
      split.labels.resize(rows.size());
      for (std::size_t index = 0; index < rows.size(); ++index)
        split.labels[index] = classes[static_cast<std::size_t>(rows[index])];
      if (rows.empty() && name == "train")
        throw_input_error("data.source.test_fraction and val_fraction leave train no samples of " +
                          whole.images.text() + " (too few per class); lower them");
      if (rows.empty())
        throw_input_error("data.source." + name + "_fraction: carves no samples out of " +
                          whole.images.text() + " (too few per class); raise it");
      return split;
    };
    std::vector<MappedSplit> parts;
    parts.push_back(part("train", carved.train));
    if (source.test_fraction > 0) parts.push_back(part("test", carved.test));
    if (source.val_fraction > 0) parts.push_back(part("val", carved.val));
    description += "; carved from train by class with split_seed " + std::to_string(source.split_seed) + ":";
    for (const auto& split : parts)
      description += " " + split.info.name + " " + std::to_string(split.info.count);
    splits_.erase(splits_.begin());
    splits_.insert(splits_.begin(), parts.begin(), parts.end());
  }
  // The schema's split order: train, test, val.
  std::stable_sort(splits_.begin(), splits_.end(), [](const MappedSplit& left, const MappedSplit& right) {
    const auto order = [](const std::string& name) { return name == "train" ? 0 : name == "test" ? 1 : 2; };
    return order(left.info.name) < order(right.info.name);
  });
  for (const auto& split : splits_) info_.splits.push_back(split.info);
  info_.path = source.train.images.text();
  description_ = "data.source: " + description + "; " + std::to_string(class_count) + " classes";

  std::ostringstream fingerprint;
  for (const auto& split : splits_) {
    fingerprint << split.info.name << "=" << file_identity(split.images.file) << ":" << split.images.dataset
                << "[" << split.info.count << "," << layout_name(split.layout) << ","
                << static_cast<int>(split.scale) << "];";
  }
  fingerprint << "split_seed=" << source.split_seed << ";val_fraction=" << source.val_fraction
              << ";test_fraction=" << source.test_fraction;
  fingerprint_ = fingerprint.str();
}

const MappedSplit& MappedSource::split(const std::string& name) const {
  for (const auto& split : splits_)
    if (split.info.name == name) return split;
  std::string available;
  for (const auto& split : splits_) available += (available.empty() ? "" : ", ") + split.info.name;
  throw_input_error("data.source has no split '" + name + "' (it has: " + available + ")");
}

}  // namespace phalanx::data
