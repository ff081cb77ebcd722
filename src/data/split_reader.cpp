// SplitReader: ranged reads of one validated split. Reads are hyperslabs along N, so a caller that
// asks for whole chunks makes HDF5 read (and decompress) each chunk exactly once.
#include "phalanx/data/split_reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/data/checked_chunk_decoding.hpp"
#include "phalanx/data/checked_file_driver.hpp"
#include "phalanx/data/dataset_storage_check.hpp"
#include "phalanx/data/hdf5_lock.hpp"
#include "phalanx/data/object_header_check.hpp"

namespace phalanx::data {
namespace {
[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw_input_error(path + ": " + what);
}

// The size of the file behind the open handle, not behind the path (a file replaced by a rename
// still reads whole through the handle); -1 when unknown (MPI-IO has no descriptor to ask).
std::int64_t open_file_bytes(hid_t file, bool mpi_io) {
  void* handle = nullptr;
  if (mpi_io || H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0 || handle == nullptr) return -1;
  struct stat status {};
  if (fstat(*static_cast<int*>(handle), &status) != 0) return -1;
  return static_cast<std::int64_t>(status.st_size);
}

// Reads samples [begin, end) of `dataset` (any rank, split along its first axis) into scratch
// memory; whether HDF5 could, and if not `failure` says why (taken before the read's handles close,
// which clears HDF5's error stack).
bool read_samples_alone(hid_t dataset, hid_t memory_type, std::int64_t begin, std::int64_t end,
                        std::string& failure) {
  detail::Hdf5Handle space = detail::dataspace_handle(H5Dget_space(dataset));
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 1 || rank > 8) return false;
  hsize_t dimensions[8] = {0}, start[8] = {0};
  H5Sget_simple_extent_dims(space.get(), dimensions, nullptr);
  start[0] = static_cast<hsize_t>(begin);
  dimensions[0] = static_cast<hsize_t>(end - begin);
  std::size_t elements = 1;
  for (int axis = 0; axis < rank; ++axis) elements *= dimensions[axis];
  std::vector<std::uint8_t> scratch(elements * H5Tget_size(memory_type));
  detail::Hdf5Handle memory = detail::dataspace_handle(H5Screate_simple(rank, dimensions, nullptr));
  if (memory.valid() &&
      H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, dimensions, nullptr) >= 0 &&
      detail::read_checked(dataset, memory_type, memory.get(), space.get(), H5P_DEFAULT, scratch.data()) >= 0)
    return true;
  failure = detail::read_failure_reason();
  return false;
}
}  // namespace

void SplitReader::fail_if_shrank(const std::string& what) const {
  const std::int64_t bytes = open_file_bytes(file_.get(), mpi_io_ != nullptr);
  if (bytes >= 0 && bytes < opened_bytes_)
    fail(path_, what + ": the file shrank from " + std::to_string(opened_bytes_) + " to " +
                    std::to_string(bytes) +
                    " bytes while it was read (truncated or being rewritten in place)");
}

void SplitReader::fail_read(hid_t dataset, hid_t memory_type, const std::string& name, std::int64_t begin,
                            std::int64_t end) const {
  // Read right after the failure, before another HDF5 call clears the error stack.
  const std::string system_reason = detail::hdf5_system_reason();
  std::string reason = detail::read_failure_reason();
  const std::string range = "[" + std::to_string(begin) + ":" + std::to_string(end) + "]";
  // Chunks past the new end of a truncated file read as zeros and then fail their checksums:
  // the truncation is the cause to name.
  fail_if_shrank(name + range);
  // The operating system refused the read (an I/O error, a file system that went away): the data
  // may be fine, the machine is not. A failure of the run, not of its input (exit status 1).
  if (!system_reason.empty())
    throw_run_failure(path_ + ": " + name + range + ": the file cannot be read: " + system_reason +
                      " (the file system failed under the run; the checkpoints written before are kept, and "
                      "--resume auto continues from the newest once the file reads again)");
  // Otherwise the bytes are wrong (a chunk fails its Fletcher-32 checksum or does not decompress):
  // read the range chunk by chunk, as HDF5 stores and checks it, to name the samples at fault. A
  // collective read needs every rank, so MPI-IO reads name the whole range.
  std::string samples = range;
  if (!mpi_io_)
    for (std::int64_t first = begin - begin % chunk_samples_; first < end; first += chunk_samples_) {
      const std::int64_t last = std::min(first + chunk_samples_, split_.count);
      std::string chunk_reason;
      if (read_samples_alone(dataset, memory_type, first, last, chunk_reason)) continue;
      samples = "[" + std::to_string(first) + ":" + std::to_string(last) + "]";
      reason = chunk_reason;
      break;
    }
  fail(path_, name + samples + ": cannot read the data: " + reason + " (the chunk of samples " + samples +
                  " is damaged" + (samples == range ? std::string() : "; read as part of " + name + range) +
                  ")");
}

SplitReader::SplitReader(const std::string& path, const std::string& split_name,
                         const comm::MpiIoAccess* mpi_io)
    : path_(path), mpi_io_(mpi_io) {
  const auto hdf5_lock = lock_hdf5();
  detail::silence_hdf5_error_printing();
  info_ = read_dataset_info(path);  // validates the schema and names what is wrong
  const DatasetInfo::SplitInfo* found = info_.find_split(split_name);
  if (!found) fail(path, "has no split '" + split_name + "'");
  split_ = *found;
  images_name_ = "/" + split_.name + "/images";
  labels_name_ = "/" + split_.name + "/labels";
  // Serial reads go through the checked driver, whose handle is the descriptor the truncation
  // check asks for; MPI-IO reads keep HDF5's MPI-IO driver (read_dataset_info above has read the
  // file's variable-length strings through the checked one already).
  const detail::Hdf5Handle checked_access = mpi_io_ ? detail::Hdf5Handle() : detail::checked_file_access();
  const hid_t file_access = mpi_io_ ? static_cast<hid_t>(mpi_io_->file_access()) : checked_access.get();
  file_ = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, file_access));
  if (!file_.valid()) fail(path, "cannot be opened (truncated or damaged file)");
  opened_bytes_ = open_file_bytes(file_.get(), mpi_io_ != nullptr);
  images_ = detail::open_checked_dataset(file_.get(), images_name_, path);
  labels_ = detail::open_checked_dataset(file_.get(), labels_name_, path);
  if (!images_.valid() || !labels_.valid())
    fail(path, "/" + split_.name + ": cannot be opened (file corrupt?)");
  detail::require_sound_dataset_storage(images_.get(), path + ": " + images_name_);
  detail::require_sound_dataset_storage(labels_.get(), path + ": " + labels_name_);
  // Contiguous (no chunks, as another tool may write it): reads of 4 MiB of samples stand for
  // chunks, so streaming holds windows of those and not the whole split as one chunk.
  chunk_samples_ = std::clamp<std::int64_t>(contiguous_read_bytes / std::max<std::int64_t>(1, image_bytes()),
                                            1, std::max<std::int64_t>(1, split_.count));
  detail::Hdf5Handle creation = detail::property_list_handle(H5Dget_create_plist(images_.get()));
  if (creation.valid() && H5Pget_layout(creation.get()) == H5D_CHUNKED) {
    hsize_t chunk[4] = {0, 0, 0, 0};
    if (H5Pget_chunk(creation.get(), 4, chunk) == 4 && chunk[0] > 0)
      chunk_samples_ = static_cast<std::int64_t>(chunk[0]);
  }
  if (chunk_samples_ < 1) chunk_samples_ = 1;
}

SplitReader::~SplitReader() {
  // The handles close here, under the lock like every other HDF5 call.
  const auto hdf5_lock = lock_hdf5();
  labels_.close();
  images_.close();
  file_.close();
}

void SplitReader::read(std::int64_t begin, std::int64_t end, std::uint8_t* images,
                       std::int32_t* labels) const {
  PHALANX_CHECK(begin >= 0 && begin <= end && end <= split_.count, "samples [", begin, ", ", end, ") of ",
                split_.count);
  // A collective read needs every rank, even one with nothing to read (it selects none).
  if (begin == end && !mpi_io_) return;
  const hid_t transfer = mpi_io_ ? static_cast<hid_t>(mpi_io_->collective_transfer()) : H5P_DEFAULT;
  const auto hdf5_lock = lock_hdf5();
  detail::silence_hdf5_error_printing();
  // Built piece by piece: GCC 12 warns falsely (-Wrestrict) on "[" + std::to_string(...).
  std::string range("[");
  range += std::to_string(begin);
  range += ":";
  range += std::to_string(end);
  range += "]";
  // A rank with nothing to read still takes part in a collective read, selecting none; its memory
  // spaces keep one sample because HDF5 refuses zero-sized dimensions.
  const bool empty = begin == end;
  const hsize_t count = static_cast<hsize_t>(end - begin), memory_count = std::max<hsize_t>(1, count);
  const hsize_t image_start[4] = {static_cast<hsize_t>(begin), 0, 0, 0};
  const hsize_t image_count[4] = {count, static_cast<hsize_t>(split_.height),
                                  static_cast<hsize_t>(split_.width), static_cast<hsize_t>(split_.channels)};
  const hsize_t image_memory_count[4] = {memory_count, image_count[1], image_count[2], image_count[3]};
  const hsize_t label_start = static_cast<hsize_t>(begin);

  detail::Hdf5Handle image_space = detail::dataspace_handle(H5Dget_space(images_.get()));
  detail::Hdf5Handle image_memory =
      detail::dataspace_handle(H5Screate_simple(4, image_memory_count, nullptr));
  bool selected = image_space.valid() && image_memory.valid();
  if (selected && empty)
    selected = H5Sselect_none(image_space.get()) >= 0 && H5Sselect_none(image_memory.get()) >= 0;
  else if (selected)
    selected = H5Sselect_hyperslab(image_space.get(), H5S_SELECT_SET, image_start, nullptr, image_count,
                                   nullptr) >= 0;
  if (!selected || detail::read_checked(images_.get(), H5T_NATIVE_UINT8, image_memory.get(),
                                        image_space.get(), transfer, images) < 0)
    fail_read(images_.get(), H5T_NATIVE_UINT8, images_name_, begin, end);

  detail::Hdf5Handle label_space = detail::dataspace_handle(H5Dget_space(labels_.get()));
  detail::Hdf5Handle label_memory = detail::dataspace_handle(H5Screate_simple(1, &memory_count, nullptr));
  selected = label_space.valid() && label_memory.valid();
  if (selected && empty)
    selected = H5Sselect_none(label_space.get()) >= 0 && H5Sselect_none(label_memory.get()) >= 0;
  else if (selected)
    selected =
        H5Sselect_hyperslab(label_space.get(), H5S_SELECT_SET, &label_start, nullptr, &count, nullptr) >= 0;
  if (!selected || detail::read_checked(labels_.get(), H5T_NATIVE_INT32, label_memory.get(),
                                        label_space.get(), transfer, labels) < 0)
    fail_read(labels_.get(), H5T_NATIVE_INT32, labels_name_, begin, end);
  // HDF5 reads a file that shrank after it was opened as zeros past the new end, without an
  // error: a dataset truncated under a running job would train on blank images. The size is
  // checked after the read, so whatever the read returned is known to be from the whole file. (A
  // file deleted or replaced while open still reads whole through its descriptor: that goes on.)
  fail_if_shrank(images_name_ + range);
  require_known_labels(labels, begin, end - begin);
}

void SplitReader::require_known_labels(const std::int32_t* labels, std::int64_t begin,
                                       std::int64_t count) const {
  const auto class_count = static_cast<std::int32_t>(info_.classes.size());
  for (std::int64_t index = 0; index < count; ++index)
    if (labels[index] < 0 || labels[index] >= class_count)
      fail(path_, labels_name_ + "[" + std::to_string(begin + index) +
                      "] = " + std::to_string(labels[index]) + " is outside [0, " +
                      std::to_string(class_count) + ") (" + std::to_string(class_count) + " classes)");
}

void SplitReader::check_labels(std::int64_t begin, std::int64_t end) const {
  PHALANX_CHECK(begin >= 0 && begin <= end && end <= split_.count, "labels [", begin, ", ", end, ") of ",
                split_.count);
  // A block at a time (4 MiB of labels), independent reads even on an MPI-IO file.
  constexpr std::int64_t block = std::int64_t{1} << 20;
  std::vector<std::int32_t> labels(
      static_cast<std::size_t>(std::min(block, std::max<std::int64_t>(1, end - begin))));
  for (std::int64_t first = begin; first < end; first += block) {
    const std::int64_t count = std::min(block, end - first);
    {
      const auto hdf5_lock = lock_hdf5();
      detail::silence_hdf5_error_printing();
      const hsize_t start = static_cast<hsize_t>(first), length = static_cast<hsize_t>(count);
      detail::Hdf5Handle label_space = detail::dataspace_handle(H5Dget_space(labels_.get()));
      detail::Hdf5Handle label_memory = detail::dataspace_handle(H5Screate_simple(1, &length, nullptr));
      const bool selected =
          label_space.valid() && label_memory.valid() &&
          H5Sselect_hyperslab(label_space.get(), H5S_SELECT_SET, &start, nullptr, &length, nullptr) >= 0;
      if (!selected || detail::read_checked(labels_.get(), H5T_NATIVE_INT32, label_memory.get(),
                                            label_space.get(), H5P_DEFAULT, labels.data()) < 0)
        fail_read(labels_.get(), H5T_NATIVE_INT32, labels_name_, first, first + count);
      fail_if_shrank(labels_name_);
    }
    require_known_labels(labels.data(), first, count);
  }
}

}  // namespace phalanx::data
