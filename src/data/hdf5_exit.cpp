// HDF5's exit handler turned off (see hdf5_exit.hpp for why).
#include "phalanx/data/hdf5_exit.hpp"

#include <hdf5.h>

namespace phalanx::data {

void skip_hdf5_exit_handler() {
  H5dont_atexit();
}

}  // namespace phalanx::data
