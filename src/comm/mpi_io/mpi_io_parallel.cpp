// MpiIoAccess over parallel HDF5: the MPI-IO file driver on the communicator, and collective
// transfers. Compiled only when CMake links parallel HDF5 (PHALANX_HDF5=MPI).
#include <hdf5.h>
#include <mpi.h>

#include "phalanx/comm/mpi_io.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::comm {

bool MpiIoAccess::available() {
  return true;
}

MpiIoAccess::MpiIoAccess(const Communicator& communicator) : size_(communicator.size()) {
  const MPI_Comm comm = *static_cast<MPI_Comm*>(communicator.handle_);
  const hid_t file_access = H5Pcreate(H5P_FILE_ACCESS);
  const hid_t transfer = H5Pcreate(H5P_DATASET_XFER);
  if (file_access < 0 || transfer < 0 || H5Pset_fapl_mpio(file_access, comm, MPI_INFO_NULL) < 0 ||
      H5Pset_dxpl_mpio(transfer, H5FD_MPIO_COLLECTIVE) < 0) {
    if (file_access >= 0) H5Pclose(file_access);
    if (transfer >= 0) H5Pclose(transfer);
    throw_internal_error("setting up HDF5 over MPI-IO failed", __FILE__, __LINE__);
  }
  file_access_ = file_access;
  transfer_ = transfer;
}

MpiIoAccess::~MpiIoAccess() {
  H5Pclose(static_cast<hid_t>(transfer_));
  H5Pclose(static_cast<hid_t>(file_access_));
}

}  // namespace phalanx::comm
