// MpiIoAccess: HDF5 file access through MPI-IO on a communicator's ranks, available when phalanx is
// built against parallel HDF5 (CMake PHALANX_HDF5=MPI, Debian's libhdf5-openmpi-dev). The data
// module uses it to open the training split collectively and to read it with collective
// transfers, where MPI-IO's two-phase I/O turns many ranks' requests into few large reads. A
// serial-HDF5 build links a version that reports itself unavailable, so callers need no #ifdef.
// HDF5 identifiers are passed as int64_t (hid_t) to keep hdf5.h out of this header.
#pragma once

#include <cstdint>

#include "phalanx/comm/communicator.hpp"

namespace phalanx::comm {

class MpiIoAccess {
 public:
  // True when this build links parallel HDF5.
  static bool available();

  // Collective over `communicator`'s ranks. Throws an internal error when not available().
  explicit MpiIoAccess(const Communicator& communicator);
  ~MpiIoAccess();
  MpiIoAccess(const MpiIoAccess&) = delete;
  MpiIoAccess& operator=(const MpiIoAccess&) = delete;

  // File-access property list (H5Fopen with it is collective over the ranks).
  std::int64_t file_access() const { return file_access_; }
  // Transfer property list for collective H5Dread calls: every rank must make the same number of
  // calls, a rank with nothing to read selecting none.
  std::int64_t collective_transfer() const { return transfer_; }
  int size() const { return size_; }

 private:
  std::int64_t file_access_ = -1;
  std::int64_t transfer_ = -1;
  int size_ = 1;
};

}  // namespace phalanx::comm
