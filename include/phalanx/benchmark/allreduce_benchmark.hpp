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

// Sizes from `minimum` to `maximum` bytes, doubling (both rounded to whole floats).
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
