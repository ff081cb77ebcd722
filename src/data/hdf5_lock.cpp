// The process-wide HDF5 lock (see hdf5_lock.hpp for why it exists).
#include "phalanx/data/hdf5_lock.hpp"

namespace phalanx::data {

std::unique_lock<std::recursive_mutex> lock_hdf5() {
  static std::recursive_mutex mutex;
  return std::unique_lock(mutex);
}

}  // namespace phalanx::data
