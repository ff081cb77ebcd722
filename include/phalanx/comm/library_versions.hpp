// The versions of the communication libraries this process loaded: MPI (the implementation and
// the standard it speaks) and, where the CUDA backend is built, NCCL. For `phalanx --version` and
// summary.json; both answer before MPI_Init and without a GPU.
#pragma once

#include <string>

namespace phalanx::comm {

// "Open MPI v4.1.4 (MPI 3.1)".
std::string mpi_library_version();
// "2.28.9"; empty when this build has no NCCL.
std::string nccl_version();

}  // namespace phalanx::comm
