// A worker group: one or more ranks that train a sweep's trials data-parallel among themselves
// (k GPU ranks over NCCL, or CPU ranks over MPI). Its leader asks the coordinator for jobs and
// reports results; every rank of the group runs each trial through the same train::Trainer as
// `phalanx train`, in process, resuming from the trial's newest checkpoint when it has one, with
// the trial's global batch cut over the group's ranks when another size of group wrote it.
#pragma once

#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/nccl_communicator.hpp"
#include "phalanx/config/sweep_config.hpp"

namespace phalanx::sweep {

struct WorkerOptions {
  const config::SweepConfig* sweep = nullptr;
  std::string sweep_directory;
  int worker = 0;                               // the group's index
  const comm::Communicator* channel = nullptr;  // the sweep communicator (coordinator is rank 0)
  const comm::Communicator* group = nullptr;    // the ranks of this group
  // Every rank of the sweep, in world order, used only to merge groups for a joined trial (no idle
  // tail); kept apart from the channel, which rank 0's coordinator thread polls.
  const comm::Communicator* sweep_ranks = nullptr;
  backend::Backend* backend = nullptr;
  comm::NcclCommunicator* nccl = nullptr;  // set when the group trains over NCCL
  int threads = 1;
  std::vector<int> ranks;  // world ranks of the group, its leader first (sent in its hello)
  // A group of a job that joined the sweep (sweep --join): its job stops after a step when the
  // coordinator asks (the sweep is stopping, or the coordinator is gone), as a handover does.
  bool joined = false;
};

// The run directory of a trial inside the sweep directory.
std::string trial_directory(const std::string& sweep_directory, int trial);

// Serves jobs until the coordinator says stop.
void run_worker(const WorkerOptions& options);

}  // namespace phalanx::sweep
