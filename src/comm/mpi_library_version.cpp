// mpi_library_version: which MPI a rank really loaded. The MPI standard allows both queries before
// MPI_Init, so `phalanx --version` can answer without starting MPI.
#include <mpi.h>

#include <string>

#include "phalanx/comm/library_versions.hpp"

namespace phalanx::comm {

std::string mpi_library_version() {
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(library, &length);
  // Open MPI's text runs on with the package, ident and date after commas: the first part names it.
  std::string name(library, static_cast<std::size_t>(length));
  name = name.substr(0, name.find_first_of(",\n"));
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  return name + " (MPI " + std::to_string(major) + "." + std::to_string(minor) + ")";
}

}  // namespace phalanx::comm
