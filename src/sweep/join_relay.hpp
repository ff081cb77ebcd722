// The joined side of `phalanx sweep SWEEP.yaml --join SWEEP_DIR` (join_protocol.hpp): a thread on
// the joining job's rank 0, in the place the coordinator takes in the sweep's own job. It passes its
// group leaders' messages (MPI, this job's channel) to the coordinator over the connection, and the
// coordinator's (jobs, handovers, stops) to the leader they are for, so the worker loop is the
// same in both jobs. It sends `leave` once when a stop signal reaches this job. When the connection
// closes before every group was told to stop (the sweep's job was killed, or its host died), it
// stops the groups itself: an idle one at once, a busy one after its next step with a checkpoint,
// so that a resumed sweep can hand the trial to another group without two writing it.
#pragma once

#include <vector>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/tcp_stream.hpp"

namespace phalanx::sweep {

struct RelayOptions {
  comm::TcpStream* link = nullptr;              // the welcomed connection to the coordinator
  const comm::Communicator* channel = nullptr;  // this job's sweep channel (rank 0 is the relay)
  std::vector<int> leaders;                     // channel rank of each group's leader
  int first_worker = 0;                         // the coordinator's number for group 0
};

enum class RelayEnd {
  SweepEnded,       // the coordinator told every group to stop
  Left,             // a stop signal made this job leave; its trials were requeued
  CoordinatorLost,  // the connection closed first; the groups stopped with their checkpoints
};

RelayEnd run_join_relay(const RelayOptions& options);

}  // namespace phalanx::sweep
