// Reading and converting samples of a mapped split. The conversion is the only place a mapped
// source differs from a native file once it is open: pixel for pixel it must give what the
// importers would have stored, so training on either gives the same weights bit for bit.
#include "mapped_split_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "mapped_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/checked_chunk_decoding.hpp"
#include "phalanx/data/hdf5_lock.hpp"

namespace phalanx::data {
namespace {

// Enough for two chunk bands (a read that starts inside one band and ends in the next), capped
// so a source with enormous chunks does not take the node's memory.
constexpr std::int64_t largest_chunk_cache_bytes = std::int64_t{512} << 20;
constexpr std::int64_t default_chunk_cache_bytes = std::int64_t{1} << 20;

}  // namespace

MappedSplitReader::MappedSplitReader(std::shared_ptr<const MappedSource> source,
                                     const std::string& split_name)
    : source_(std::move(source)), split_(source_->split(split_name)) {
  const auto hdf5_lock = lock_hdf5();
  detail::silence_hdf5_error_printing();
  const std::int64_t cache_bytes = std::clamp<std::int64_t>(
      2 * split_.chunk_band_bytes, default_chunk_cache_bytes, largest_chunk_cache_bytes);
  // The labels' chunks too: a streaming read takes one image chunk at a time, and a label chunk
  // the cache cannot hold would be read and decoded again for each.
  const std::int64_t label_cache_bytes = std::clamp<std::int64_t>(
      2 * split_.label_chunk_bytes, default_chunk_cache_bytes, largest_chunk_cache_bytes);
  try {
    file_ = mapped::open_file(split_.images.file, split_.images_key);
    images_ = mapped::open_dataset(file_.get(), split_.images, split_.images_key, cache_bytes);
    if (split_.labels.empty()) {  // a carved split holds its labels
      label_file_ = mapped::open_file(split_.labels_location.file, split_.labels_key);
      labels_ = mapped::open_dataset(label_file_.get(), split_.labels_location, split_.labels_key,
                                     label_cache_bytes);
    }
  } catch (...) {
    // Closed here, under the lock, not by the members' destructors after it is released.
    labels_.close();
    label_file_.close();
    images_.close();
    file_.close();
    throw;
  }
}

MappedSplitReader::~MappedSplitReader() {
  const auto hdf5_lock = lock_hdf5();
  labels_.close();
  label_file_.close();
  images_.close();
  file_.close();
}

std::int64_t MappedSplitReader::chunk_samples() const {
  return std::max<std::int64_t>(1, std::min(split_.chunk_rows, split_.info.count));
}

void MappedSplitReader::read_rows(std::int64_t row, std::int64_t count, std::uint8_t* images) const {
  const auto& dimensions = split_.image_dimensions;
  const int rank = static_cast<int>(dimensions.size());
  std::vector<hsize_t> start(dimensions.size(), 0), size(dimensions.begin(), dimensions.end());
  start[0] = static_cast<hsize_t>(row);
  size[0] = static_cast<hsize_t>(count);
  detail::Hdf5Handle file_space = detail::dataspace_handle(H5Dget_space(images_.get()));
  detail::Hdf5Handle memory_space = detail::dataspace_handle(H5Screate_simple(rank, size.data(), nullptr));
  const auto fail_read = [&]() {
    mapped::fail(split_.images, split_.images_key,
                 "samples " + std::to_string(row) + ".." + std::to_string(row + count) +
                     ": cannot read the data (" + detail::read_failure_reason() + ")");
  };
  if (!file_space.valid() || !memory_space.valid() ||
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, size.data(), nullptr) < 0)
    fail_read();

  const int height = split_.info.height, width = split_.info.width, channels = split_.info.channels;
  const std::size_t sample_values = static_cast<std::size_t>(height) * width * channels;
  const std::size_t values = sample_values * static_cast<std::size_t>(count);
  // uint8 stored as NHWC (or NHW, the same bytes) goes straight into the output.
  const bool direct = split_.scale == PixelScale::Bytes && split_.layout != ImageLayout::Nchw;
  if (direct) {
    if (detail::read_checked(images_.get(), H5T_NATIVE_UINT8, memory_space.get(), file_space.get(),
                             H5P_DEFAULT, images) < 0)
      fail_read();
    return;
  }
  // Otherwise read in stored order, then convert value by value into NHWC uint8.
  std::vector<std::uint8_t> stored_bytes;
  std::vector<float> stored_floats;
  if (split_.scale == PixelScale::Bytes) {
    stored_bytes.resize(values);
    if (detail::read_checked(images_.get(), H5T_NATIVE_UINT8, memory_space.get(), file_space.get(),
                             H5P_DEFAULT, stored_bytes.data()) < 0)
      fail_read();
  } else {
    stored_floats.resize(values);
    if (detail::read_checked(images_.get(), H5T_NATIVE_FLOAT, memory_space.get(), file_space.get(),
                             H5P_DEFAULT, stored_floats.data()) < 0)
      fail_read();
  }
  const bool unit = split_.scale == PixelScale::Unit;
  const double factor = unit ? 255.0 : 1.0;
  const auto to_byte = [&](std::size_t index) -> std::uint8_t {
    if (split_.scale == PixelScale::Bytes) return stored_bytes[index];
    const float value = stored_floats[index];
    if (!(value >= 0.0f && value <= (unit ? 1.0f : 255.0f))) {
      std::ostringstream text;
      text << value;
      mapped::fail(split_.images, split_.images_key,
                   "sample " + std::to_string(row + static_cast<std::int64_t>(index / sample_values)) +
                       " has the value " + text.str() + ", outside [0, " + (unit ? "1" : "255") +
                       "] (the range read from a sample of the images: " + split_.scale_evidence + ")");
    }
    return static_cast<std::uint8_t>(std::lround(static_cast<double>(value) * factor));
  };
  const bool planar = split_.layout == ImageLayout::Nchw;
  const std::size_t plane = static_cast<std::size_t>(height) * width;
  for (std::size_t sample = 0; sample < static_cast<std::size_t>(count); ++sample) {
    std::uint8_t* output = images + sample * sample_values;
    const std::size_t base = sample * sample_values;
    if (!planar) {
      for (std::size_t index = 0; index < sample_values; ++index) output[index] = to_byte(base + index);
      continue;
    }
    for (int channel = 0; channel < channels; ++channel)
      for (std::size_t pixel = 0; pixel < plane; ++pixel)
        output[pixel * channels + channel] = to_byte(base + channel * plane + pixel);
  }
}

void MappedSplitReader::read_label_rows(std::int64_t row, std::int64_t count, std::int32_t* labels) const {
  const auto& dimensions = split_.label_dimensions;
  std::int64_t width = 1;
  for (std::size_t axis = 1; axis < dimensions.size(); ++axis)
    width *= static_cast<std::int64_t>(dimensions[axis]);
  const auto class_count = static_cast<std::int64_t>(source_->info().classes.size());
  // In blocks, as at opening: a rank cache or an evaluation reads a whole split in one call.
  const std::int64_t block_rows =
      std::max<std::int64_t>(1, label_block_values / std::max<std::int64_t>(1, width));
  std::vector<double> values;
  for (std::int64_t first = row; first < row + count; first += block_rows) {
    const std::int64_t rows = std::min(block_rows, row + count - first);
    if (!mapped::read_label_rows(labels_.get(), dimensions, first, rows, values))
      mapped::fail(split_.labels_location, split_.labels_key,
                   "rows " + std::to_string(first) + ".." + std::to_string(first + rows) +
                       ": cannot read the data (" + detail::read_failure_reason() + ")");
    // Checked again as read, as a native file's labels are: the file may have been rewritten since
    // the source was opened, and a label out of range must not reach the loss.
    for (std::int64_t index = 0; index < rows; ++index) {
      const double* row_values = values.data() + index * width;
      const double label = split_.label_encoding == LabelEncoding::OneHot
                               ? static_cast<double>(mapped::one_hot_class(row_values, width))
                               : row_values[0];
      if (!(label >= 0 && label < static_cast<double>(class_count) && label == std::floor(label)))
        mapped::fail(split_.labels_location, split_.labels_key,
                     "row " + std::to_string(first + index) + " no longer holds a label of the " +
                         std::to_string(class_count) +
                         " classes it held when the source was opened (was the file rewritten?)");
      labels[first - row + index] = static_cast<std::int32_t>(label);
    }
  }
}

void MappedSplitReader::read(std::int64_t begin, std::int64_t end, std::uint8_t* images,
                             std::int32_t* labels) const {
  PHALANX_CHECK(begin >= 0 && begin <= end && end <= split_.info.count, "samples [", begin, ", ", end,
                ") of ", split_.info.count);
  if (begin == end) return;
  const auto hdf5_lock = lock_hdf5();
  detail::silence_hdf5_error_printing();
  const std::int64_t sample_bytes = image_bytes();
  std::int64_t run_begin = begin;
  while (run_begin < end) {
    // The longest run of consecutive stored rows from here.
    std::int64_t run_end = run_begin + 1;
    while (run_end < end && split_.stored_row(run_end) == split_.stored_row(run_end - 1) + 1) ++run_end;
    read_rows(split_.stored_row(run_begin), run_end - run_begin, images + (run_begin - begin) * sample_bytes);
    run_begin = run_end;
  }
  // A carved split holds its labels (the carving read them all); any other reads them with the
  // images: its stored rows are its samples.
  if (!split_.labels.empty()) {
    std::memcpy(labels, split_.labels.data() + begin,
                static_cast<std::size_t>(end - begin) * sizeof(std::int32_t));
    return;
  }
  PHALANX_CHECK(split_.rows.empty(), "a carved split without its labels");
  read_label_rows(begin, end - begin, labels);
}

}  // namespace phalanx::data
