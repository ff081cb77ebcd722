// A rank's device and threads (docs/DESIGN.md §3): which GPU a rank drives, or how many threads
// it trains with on the CPU. Every MPI command asks for them first; a training job keeps them for
// its run, a sweep's worker group for all of its trials.
#pragma once

#include <memory>
#include <string>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::train {

struct RankResources {
  std::unique_ptr<backend::Backend> backend;
  int threads = 1;
};

// This rank's GPU as docs/DESIGN.md §3 assigns them (backend/device_assignment.hpp), from the PCI bus ids
// every rank of the node sees: collective over the node's ranks of `communicator`.
struct LocalGpu {
  int device = -1;         // the CUDA device this rank drives; -1: a CPU rank
  bool sees_gpu = false;   // this rank sees at least one usable GPU (taken or not)
  int node_gpus = 0;       // physical GPUs the node's ranks see together
  int node_cpu_ranks = 1;  // the node's ranks left without a GPU
};
LocalGpu find_local_gpu(const comm::Communicator& communicator);

// `device` is cpu | cuda | auto (docs/DESIGN.md §3): with auto, local ranks 0..G-1 take the node's G GPUs
// and further local ranks train on the CPU; cuda requires a GPU for every rank, cpu uses none.
// Unless `device` is cpu, collective over the node (find_local_gpu).
// `threads` (CPU ranks) 0 means: OMP_NUM_THREADS if set, else the node's cores shared evenly among
// its CPU ranks.
RankResources make_rank_resources(config::Device device, int threads,
                                  const comm::Communicator& communicator);

}  // namespace phalanx::train
