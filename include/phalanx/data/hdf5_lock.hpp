// One process-wide lock around every HDF5 call. Debian builds HDF5 without its thread-safety
// option, and the streaming loader reads the dataset on its own thread while the training thread
// may write a checkpoint, so each HDF5 entry point of phalanx holds this lock for its whole call
// (including closing its handles). It is recursive: an entry point may call another.
#pragma once

#include <mutex>

namespace phalanx::data {

std::unique_lock<std::recursive_mutex> lock_hdf5();

}  // namespace phalanx::data
