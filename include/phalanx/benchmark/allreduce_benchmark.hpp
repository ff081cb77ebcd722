// All-reduce bandwidth by message size, reported like nccl-tests: algorithm bandwidth
// (bytes / time) and bus bandwidth (algbw x 2(n-1)/n, the per-link traffic of a ring, comparable
// across rank counts and with hardware link speeds). MPI on host memory (blocking, and the
// non-blocking call GradSync overlaps with backward) and NCCL on device memory.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/nccl_communicator.hpp"

namespace phalanx::benchmark {

struct AllreduceSettings {
  std::vector<std::size_t> bytes;  // message sizes (multiples of 4: float32 sums)
  int warmup = 5;
  int iterations = 20;
};

struct AllreduceResult {
  std::size_t bytes = 0;
  double seconds = 0;                                 // median over iterations of the slowest rank's time
  double algorithm_bandwidth = 0, bus_bandwidth = 0;  // bytes per second
};

// How MPI's non-blocking all-reduce of `bytes` advances when the ranks call MPI only now and then,
// as a rank in backward does (GradSync tests its all-reduces once per layer). MPI moves an
// all-reduce inside its calls: a call starts what the schedule allows (a round's messages, a
// rendezvous handshake's next message), and the transfer it starts then runs on without the CPU
// over a network, until the next call is needed; over shared memory the call may make the copy
// itself. `stages[j]` is how much of the all-reduce's time the j-th call starts (the 0th is the
// launch); their sum is about the time of a launch and an immediate wait. Measured by launching,
// calling MPI_Test k times a gap apart (longer than the whole all-reduce, so whatever a call starts
// is over before the next) and timing the rest from the start of the k-th test (its time inside and
// the wait after it), for k = 0, 1, ... until nothing remains: stage j = rest(j) - rest(j + 1).
// `seconds_in_calls[j]` is the time inside the j-th call (0 for the launch): where MPI does the
// moving itself inside a call, the call holds the rank that long instead of the transfer running
// beside its compute.
struct ProgressStages {
  std::size_t bytes = 0;
  std::vector<double> stages;
  std::vector<double> seconds_in_calls;
};

// Collective over `communicator`, at each of `settings.bytes`; `iterations` launches per count of
// tests (fewer where a launch with its gaps takes over 0.4 s, at least one), `max_calls`
// tests at most (the rest is one last stage).
std::vector<ProgressStages> measure_progress_stages(const comm::Communicator& communicator,
                                                    const AllreduceSettings& settings, int iterations,
                                                    int max_calls = 16);

// The largest message the benchmarks time: 8 GiB, beyond a GPU's memory for a buffer of it.
inline constexpr std::size_t most_benchmark_bytes =
    (std::size_t{1} << 33) - 4;  // 2^31 - 1 floats: one MPI count

// Sizes from `minimum` (rounded down to whole floats, at least one) to `maximum` bytes, doubling;
// the doubling stops before it would wrap, whatever `maximum` is.
std::vector<std::size_t> doubling_sizes(std::size_t minimum, std::size_t maximum);

double bus_bandwidth_factor(int ranks);  // 2(n-1)/n

// Collective over `communicator`: every rank gets the same results.
std::vector<AllreduceResult> benchmark_mpi_allreduce(const comm::Communicator& communicator,
                                                     const AllreduceSettings& settings, bool nonblocking);
// Collective over `nccl` (every rank a GPU); `backend` allocates the device buffer and
// `communicator` (the same ranks) takes the slowest rank's time.
std::vector<AllreduceResult> benchmark_nccl_allreduce(comm::NcclCommunicator& nccl, backend::Backend& backend,
                                                      const comm::Communicator& communicator,
                                                      const AllreduceSettings& settings);

// The nccl-tests style table: one row per size, time (us), algbw and busbw (GB/s) per column.
std::string allreduce_table(int ranks, const std::vector<std::string>& names,
                            const std::vector<std::vector<AllreduceResult>>& columns);

}  // namespace phalanx::benchmark
