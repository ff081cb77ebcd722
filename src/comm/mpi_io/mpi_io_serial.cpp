// MpiIoAccess in a build against serial HDF5 (PHALANX_HDF5=SERIAL): not available; readers fall
// back to each rank reading through HDF5's default POSIX driver.
#include "phalanx/comm/mpi_io.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::comm {

bool MpiIoAccess::available() {
  return false;
}

MpiIoAccess::MpiIoAccess(const Communicator& communicator) : size_(communicator.size()) {
  throw_internal_error("MPI-IO reads need phalanx built against parallel HDF5 (PHALANX_HDF5=MPI)", __FILE__,
                       __LINE__);
}

MpiIoAccess::~MpiIoAccess() = default;

}  // namespace phalanx::comm
