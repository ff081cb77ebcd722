// An all-reduce measured on this machine: one of the transports `phalanx bench calibrate` fits
// (MPI over shared memory within a host, MPI over the network between hosts, NCCL), as time =
// latency + bytes x seconds_per_byte at the rank count it was measured at. It predicts what NCCL's
// cost model does not cover, CPU ranks' MPI all-reduce, and checks the model against a machine at
// hand; it says nothing about another rank count, so a prediction at one is refused.
#pragma once

#include <cstddef>
#include <string>

#include "phalanx/scaling/allreduce_cost_model.hpp"

namespace phalanx::scaling {

struct MeasuredTransport {
  std::string name;     // shared_memory, network or nccl
  std::string profile;  // the file it came from
  int ranks = 0;        // what it was measured at
  double latency = 0;   // seconds
  double seconds_per_byte = 0;
};

// The transport `name` of a profile's `transports`; exits 2 naming the file and the field where the
// profile lacks it or a figure of it.
MeasuredTransport read_measured_transport(const std::string& profile_path, const std::string& name);

// The fitted time of one all-reduce of `bytes` (reported as a ring with the Simple protocol).
AllreduceEstimate estimate_allreduce(const MeasuredTransport& transport, std::size_t bytes);

}  // namespace phalanx::scaling
