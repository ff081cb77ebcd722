// NodeSharedBuffer over an MPI-3 shared-memory window. The window stays in one passive-target
// epoch (lock_all) for its whole life, so publish() needs only MPI_Win_sync and a node barrier:
// the pattern the MPI standard gives for the unified memory model of shared windows.
#include "phalanx/comm/node_shared_buffer.hpp"

#include <mpi.h>

#include <string>

#include "mpi_check.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::comm {

NodeSharedBuffer::NodeSharedBuffer(const Communicator& communicator, std::size_t bytes) : bytes_(bytes) {
  auto* node = new MPI_Comm(MPI_COMM_NULL);
  auto* window = new MPI_Win(MPI_WIN_NULL);
  node_ = node;
  window_ = window;
  try {
    const MPI_Comm parent = *static_cast<MPI_Comm*>(communicator.handle_);
    PHALANX_MPI(MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, communicator.rank(), MPI_INFO_NULL, node));
    PHALANX_MPI(MPI_Comm_rank(*node, &local_rank_));
    PHALANX_MPI(MPI_Comm_size(*node, &local_size_));
    // Only the first rank contributes memory; asking for "alloc_shared_noncontig" is not needed
    // because the other ranks contribute none.
    const MPI_Aint own = local_rank_ == 0 ? static_cast<MPI_Aint>(bytes > 0 ? bytes : 1) : 0;
    void* base = nullptr;
    PHALANX_MPI(MPI_Win_allocate_shared(own, 1, MPI_INFO_NULL, *node, &base, window));
    MPI_Aint size = 0;
    int unit = 0;
    PHALANX_MPI(MPI_Win_shared_query(*window, 0, &size, &unit, &base));
    PHALANX_CHECK(static_cast<std::size_t>(size) >= bytes, "shared window of ", size, " bytes for ", bytes);
    data_ = static_cast<std::uint8_t*>(base);
    PHALANX_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, *window));
  } catch (...) {
    if (*window != MPI_WIN_NULL) MPI_Win_free(window);
    if (*node != MPI_COMM_NULL) MPI_Comm_free(node);
    delete window;
    delete node;
    throw;
  }
}

NodeSharedBuffer::~NodeSharedBuffer() {
  auto* node = static_cast<MPI_Comm*>(node_);
  auto* window = static_cast<MPI_Win*>(window_);
  MPI_Win_unlock_all(*window);
  MPI_Win_free(window);
  MPI_Comm_free(node);
  delete window;
  delete node;
}

void NodeSharedBuffer::publish() {
  auto* window = static_cast<MPI_Win*>(window_);
  PHALANX_MPI(MPI_Win_sync(*window));
  PHALANX_MPI(MPI_Barrier(*static_cast<MPI_Comm*>(node_)));
  PHALANX_MPI(MPI_Win_sync(*window));
}

}  // namespace phalanx::comm
