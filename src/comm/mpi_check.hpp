// PHALANX_MPI(call): an MPI call whose failure becomes a phalanx::Error with MPI's own text, the
// call and its place (private to src/comm, the only code that includes mpi.h).
#pragma once

#include <mpi.h>

#include <string>

#include "phalanx/core/error.hpp"

namespace phalanx::comm {

inline void check_mpi(int result, const char* call, const char* file, int line) {
  if (result == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(result, text, &length);
  throw_internal_error(std::string(call) + " failed: " + std::string(text, length), file, line);
}

}  // namespace phalanx::comm

#define PHALANX_MPI(call) ::phalanx::comm::check_mpi((call), #call, __FILE__, __LINE__)
