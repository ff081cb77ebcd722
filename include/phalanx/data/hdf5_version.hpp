// hdf5_version: the HDF5 library this process loaded and its flavour (serial, or parallel with
// MPI-IO reads); docs/DESIGN.md §9 says a build links exactly one, and a bug report must say which.
#pragma once

#include <string>

namespace phalanx::data {

// "1.10.8 (serial)" or "1.10.8 (parallel)".
std::string hdf5_version();

}  // namespace phalanx::data
