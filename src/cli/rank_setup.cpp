// Device/thread selection and collective error agreement.
#include "rank_setup.hpp"

#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::cli {

RankResources make_rank_resources(const std::string& device, int threads,
                                  const comm::Communicator& communicator) {
  PHALANX_REQUIRE_INPUT(
      device != "cuda",
      "device: cuda was asked for, but this phalanx build has no CUDA backend (set device: cpu or auto)");
  RankResources resources;
  if (threads <= 0) {
    if (std::getenv("OMP_NUM_THREADS")) {
      threads = omp_get_max_threads();
    } else {
      const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      threads = std::max(1, cores / std::max(1, communicator.local_size()));
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

}  // namespace phalanx::cli
