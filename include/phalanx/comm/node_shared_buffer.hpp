// NodeSharedBuffer: one block of memory per node that every rank of the node maps, allocated with
// MPI-3 shared-memory windows (MPI_Win_allocate_shared on the node's communicator). The node
// cache (data.cache: node) keeps the training split here, so 8 ranks on a node hold one copy.
// Construction and destruction are collective over the communicator's ranks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "phalanx/comm/communicator.hpp"

namespace phalanx::comm {

class NodeSharedBuffer {
 public:
  // Every rank passes the same `bytes`; the memory is allocated once, by the node's first rank.
  NodeSharedBuffer(const Communicator& communicator, std::size_t bytes);
  ~NodeSharedBuffer();
  NodeSharedBuffer(const NodeSharedBuffer&) = delete;
  NodeSharedBuffer& operator=(const NodeSharedBuffer&) = delete;

  std::uint8_t* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

  // Collective over the node: after it, what any rank of the node wrote before it is visible to
  // all of them (memory synchronisation of the window plus a node barrier).
  void publish();

 private:
  void* node_ = nullptr;    // MPI_Comm*
  void* window_ = nullptr;  // MPI_Win*
  std::uint8_t* data_ = nullptr;
  std::size_t bytes_ = 0;
  int local_rank_ = 0, local_size_ = 1;
};

}  // namespace phalanx::comm
