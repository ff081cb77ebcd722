// An all-reduce measured on this machine: one of the transports `phalanx bench calibrate` times
// (MPI over shared memory within a host, MPI over the network between hosts, NCCL) at doubling
// sizes, with time = latency + bytes x seconds_per_byte fitted to them, at the rank count it was
// measured at. It predicts what NCCL's cost model does not cover, CPU ranks' MPI all-reduce, and
// checks the model against a machine at hand; it says nothing about another rank count, so a
// prediction at one is refused.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "phalanx/scaling/allreduce_cost_model.hpp"

namespace phalanx::scaling {

// How an all-reduce advances when MPI is called only now and then: `stages[j]` seconds of it start
// at the (j+1)-th call (the first is the launch) and run on without further calls; the call that
// starts stage j holds its rank `seconds_in_calls[j]` (a copy MPI makes inside the call).
struct CallStages {
  std::vector<double> stages;
  std::vector<double> seconds_in_calls;
};

struct MeasuredTransport {
  std::string name;     // shared_memory, network or nccl
  std::string profile;  // the file it came from
  std::int64_t ranks = 0;  // what it was measured at
  double latency = 0;   // seconds
  double seconds_per_byte = 0;
  // The timed sizes, ascending: (bytes, seconds). MPI switches algorithms and protocols by size
  // (over TCP the time per byte of a 1 MiB all-reduce can be twice a 64 KiB one's), which one line
  // through all of them misses.
  std::vector<std::pair<double, double>> measured;
  // Per timed size (where the profile has them; empty otherwise): how the all-reduce advances at
  // sparse MPI calls, `bench calibrate`'s progress stages.
  std::vector<CallStages> progress;
  // NCCL runs its all-reduce on its own stream beside backward; MPI's non-blocking all-reduce
  // advances only inside MPI calls (docs/SCALING.md), which for a rank in backward is its one test
  // per layer.
  bool progresses_during_backward() const { return name == "nccl"; }
};

// The transport `name` of a profile's `transports`; exits 2 naming the file and the field where the
// profile lacks it or a figure of it.
MeasuredTransport read_measured_transport(const std::string& profile_path, const std::string& name);

// The time of one all-reduce of `bytes` (reported as a ring with the Simple protocol): between two
// timed sizes, the line through them; below the smallest, the line from the fitted latency to it;
// above the largest, the fitted time per byte from it; the fit alone where nothing was timed.
AllreduceEstimate estimate_allreduce(const MeasuredTransport& transport, std::size_t bytes);

// The stages of an all-reduce of `bytes`: those of the timed size nearest to it (by ratio), scaled
// to estimate_allreduce's time. Empty where the profile has no stages.
CallStages call_stages(const MeasuredTransport& transport, std::size_t bytes);

}  // namespace phalanx::scaling
