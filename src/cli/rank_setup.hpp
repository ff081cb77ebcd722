// What every MPI command does first: pick the device and threads of this rank (DESIGN §3), and
// agree across ranks on whether setup failed, so a bad input on any rank ends every rank with
// one message and exit status 2 instead of a hang (private to src/cli).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"

namespace phalanx::cli {

struct RankResources {
  std::unique_ptr<backend::Backend> backend;
  int threads = 1;
};

// This rank's GPU as DESIGN §3 assigns them (backend/device_assignment.hpp), from the PCI bus ids
// every rank of the node sees: collective over the node's ranks of `communicator`.
struct LocalGpu {
  int device = -1;         // the CUDA device this rank drives; -1: a CPU rank
  bool sees_gpu = false;   // this rank sees at least one usable GPU (taken or not)
  int node_gpus = 0;       // physical GPUs the node's ranks see together
  int node_cpu_ranks = 1;  // the node's ranks left without a GPU
};
LocalGpu find_local_gpu(const comm::Communicator& communicator);

// `device` is cpu | cuda | auto (DESIGN §3): with auto, local ranks 0..G-1 take the node's G GPUs
// and further local ranks train on the CPU; cuda requires a GPU for every rank, cpu uses none.
// Unless `device` is cpu, collective over the node (find_local_gpu).
// `threads` (CPU ranks) 0 means: OMP_NUM_THREADS if set, else the node's cores shared evenly among
// its CPU ranks.
RankResources make_rank_resources(const std::string& device, int threads,
                                  const comm::Communicator& communicator);

// Runs `step` on every rank. Returns 0 when it succeeded everywhere; otherwise the worst exit
// status, after the lowest failing rank printed its message (the others stay quiet).
int agree(const comm::Communicator& communicator, const std::function<void()>& step);

// Runs the body of a command once setup agreed: from here on every rank sits in the same
// collectives, so a failure on one rank ends the whole job (MPI_Abort) rather than leave the
// others waiting forever. Returns the exit status when there is only one rank.
int run_or_abort(const comm::Communicator& communicator, const std::function<void()>& body);

}  // namespace phalanx::cli
