// What reading a file's structures directly needs to know of it (hdf5_header_reading.hpp).
#include "hdf5_header_reading.hpp"

#include "phalanx/data/checked_file_driver.hpp"
#include "phalanx/data/hdf5_handle.hpp"

namespace phalanx::data::detail::hdf5_format {

bool describe_file(hid_t location, FileFacts& facts) {
  const Hdf5Handle file = file_handle(H5Iget_file_id(location));
  if (!file.valid()) return false;
  const Hdf5Handle creation = property_list_handle(H5Fget_create_plist(file.get()));
  std::size_t address_bytes = 0, length_bytes = 0;
  hsize_t user_block = 0;
  if (!creation.valid() || H5Pget_sizes(creation.get(), &address_bytes, &length_bytes) < 0 ||
      H5Pget_userblock(creation.get(), &user_block) < 0 || address_bytes < 2 || address_bytes > 8 ||
      length_bytes < 2 || length_bytes > 8)
    return false;
  facts = {checked_file_descriptor(file.get()), user_block, static_cast<unsigned>(address_bytes),
           static_cast<unsigned>(length_bytes)};
  return true;
}

}  // namespace phalanx::data::detail::hdf5_format
