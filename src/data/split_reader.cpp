// SplitReader: ranged reads of one validated split. Reads are hyperslabs along N, so a caller that
// asks for whole chunks makes HDF5 read (and decompress) each chunk exactly once.
#include "phalanx/data/split_reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <string>

#include "phalanx/core/error.hpp"
#include "phalanx/data/hdf5_lock.hpp"

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
}  // namespace

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
  const hid_t file_access = mpi_io_ ? static_cast<hid_t>(mpi_io_->file_access()) : H5P_DEFAULT;
  file_ = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, file_access));
  if (!file_.valid()) fail(path, "cannot be opened (truncated or damaged file)");
  opened_bytes_ = open_file_bytes(file_.get(), mpi_io_ != nullptr);
  images_ = detail::dataset_handle(H5Dopen2(file_.get(), images_name_.c_str(), H5P_DEFAULT));
  labels_ = detail::dataset_handle(H5Dopen2(file_.get(), labels_name_.c_str(), H5P_DEFAULT));
  if (!images_.valid() || !labels_.valid())
    fail(path, "/" + split_.name + ": cannot be opened (file corrupt?)");
  chunk_samples_ = split_.count;
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
  if (!selected ||
      H5Dread(images_.get(), H5T_NATIVE_UINT8, image_memory.get(), image_space.get(), transfer, images) < 0)
    fail(path_, images_name_ + range + ": cannot read the data (file truncated or corrupt)");

  detail::Hdf5Handle label_space = detail::dataspace_handle(H5Dget_space(labels_.get()));
  detail::Hdf5Handle label_memory = detail::dataspace_handle(H5Screate_simple(1, &memory_count, nullptr));
  selected = label_space.valid() && label_memory.valid();
  if (selected && empty)
    selected = H5Sselect_none(label_space.get()) >= 0 && H5Sselect_none(label_memory.get()) >= 0;
  else if (selected)
    selected =
        H5Sselect_hyperslab(label_space.get(), H5S_SELECT_SET, &label_start, nullptr, &count, nullptr) >= 0;
  if (!selected ||
      H5Dread(labels_.get(), H5T_NATIVE_INT32, label_memory.get(), label_space.get(), transfer, labels) < 0)
    fail(path_, labels_name_ + range + ": cannot read the data (file truncated or corrupt)");
  // HDF5 reads a file that shrank after it was opened as zeros past the new end, without an
  // error: a dataset truncated under a running job would train on blank images. The size is
  // checked after the read, so whatever the read returned is known to be from the whole file. (A
  // file deleted or replaced while open still reads whole through its descriptor: that goes on.)
  const std::int64_t bytes = open_file_bytes(file_.get(), mpi_io_ != nullptr);
  if (bytes >= 0 && bytes < opened_bytes_)
    fail(path_, images_name_ + range + ": the file shrank from " + std::to_string(opened_bytes_) + " to " +
                    std::to_string(bytes) + " bytes while it was read (truncated or being rewritten in place)");
  const auto class_count = static_cast<std::int32_t>(info_.classes.size());
  for (std::int64_t index = 0; index < end - begin; ++index)
    if (labels[index] < 0 || labels[index] >= class_count)
      fail(path_, labels_name_ + "[" + std::to_string(begin + index) +
                      "] = " + std::to_string(labels[index]) + " is outside [0, " +
                      std::to_string(class_count) + ") (" + std::to_string(class_count) + " classes)");
}

}  // namespace phalanx::data
