// hdf5_version: H5get_libversion asks the loaded library; the flavour is the one compiled in, since
// the serial and parallel flavours have different headers (H5_HAVE_PARALLEL).
#include "phalanx/data/hdf5_version.hpp"

#include <hdf5.h>

#include "phalanx/data/hdf5_lock.hpp"

namespace phalanx::data {

std::string hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  {
    const auto lock = lock_hdf5();  // Debian's HDF5 is not thread-safe: every call goes through the lock
    H5get_libversion(&major, &minor, &release);
  }
#ifdef H5_HAVE_PARALLEL
  const char* flavour = "parallel";
#else
  const char* flavour = "serial";
#endif
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release) + " (" +
         flavour + ")";
}

}  // namespace phalanx::data
