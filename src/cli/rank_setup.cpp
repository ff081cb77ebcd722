// Device/thread selection and collective error agreement.
#include "rank_setup.hpp"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::cli {

RankResources make_rank_resources(const std::string& device, int threads,
                                  const comm::Communicator& communicator) {
  // DESIGN §3: local ranks 0..G-1 take the node's G visible GPUs, one each; further local ranks
  // are CPU ranks. `device` may force either.
  const int gpus = device == "cpu" ? 0 : backend::cuda_device_count();
  const int local_rank = communicator.local_rank();
  if (device == "cuda") {
    PHALANX_REQUIRE_INPUT(gpus > 0, "device: cuda, but rank ", communicator.rank(), " on ",
                          communicator.host_name(),
                          " finds no usable CUDA device (no GPU, no driver, or a build without the CUDA "
                          "backend); set device: cpu or auto");
    PHALANX_REQUIRE_INPUT(local_rank < gpus, "device: cuda, but ", communicator.local_size(),
                          " ranks share the ", gpus, " GPU", gpus == 1 ? "" : "s", " of ",
                          communicator.host_name(), " and local rank ", local_rank,
                          " has none of its own; start at most one rank per GPU, or use device: auto ",
                          "(further ranks then train on the CPU)");
  }
  RankResources resources;
  if (local_rank < gpus) {
    resources.backend = backend::make_cuda_backend(local_rank);
    resources.threads = 1;  // the host thread feeds the GPU; the loader has its own thread
    return resources;
  }
  if (threads <= 0) {
    if (std::getenv("OMP_NUM_THREADS")) {
      threads = omp_get_max_threads();
    } else {
      // The node's cores shared among its CPU ranks, but never more than the cores this rank may
      // run on: Open MPI binds small jobs to one core each, and threads beyond that only fight.
      const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      const int cpu_ranks =
          std::max(1, communicator.local_size() - std::min(gpus, communicator.local_size()));
      cpu_set_t allowed;
      CPU_ZERO(&allowed);
      const int usable = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 ? CPU_COUNT(&allowed) : cores;
      threads = std::max(1, std::min(usable, cores / cpu_ranks));
    }
  }
  resources.threads = threads;
  resources.backend = backend::make_cpu_backend(threads);
  return resources;
}

int agree(const comm::Communicator& communicator, const std::function<void()>& step) {
  int status = 0;
  std::string message;
  try {
    step();
  } catch (const Error& error) {
    status = error.exit_status();
    message = error.what();
  } catch (const std::exception& error) {
    status = 1;
    message = "rank " + std::to_string(communicator.rank()) + ": " + error.what();
  } catch (...) {
    status = 1;
    message = "rank " + std::to_string(communicator.rank()) + ": unknown exception";
  }
  const auto statuses = communicator.allgather(static_cast<std::uint64_t>(status));
  int worst = 0, first_failing = -1;
  for (int rank = 0; rank < communicator.size(); ++rank) {
    const int rank_status = static_cast<int>(statuses[rank]);
    if (rank_status != 0 && first_failing < 0) first_failing = rank;
    worst = std::max(worst, rank_status);
  }
  if (first_failing == communicator.rank()) std::fprintf(stderr, "phalanx: error: %s\n", message.c_str());
  return worst;
}

int run_or_abort(const comm::Communicator& communicator, const std::function<void()>& body) {
  int status = 0;
  try {
    body();
    return 0;
  } catch (const Error& error) {
    std::fprintf(stderr, "phalanx: error: %s\n", error.what());
    status = error.exit_status();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "phalanx: error: rank %d: %s\n", communicator.rank(), error.what());
    status = 1;
  } catch (...) {
    std::fprintf(stderr, "phalanx: error: rank %d: unknown exception\n", communicator.rank());
    status = 1;
  }
  std::fflush(stderr);
  if (communicator.size() > 1) comm::MpiSession::abort(status);
  return status;
}

}  // namespace phalanx::cli
