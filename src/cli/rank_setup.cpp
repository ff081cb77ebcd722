// Device/thread selection and collective error agreement.
#include "rank_setup.hpp"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>
#include <vector>

#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/backend/device_assignment.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::cli {

LocalGpu find_local_gpu(const comm::Communicator& communicator) {
  const auto node = communicator.node();
  // One line per local rank, its bus ids joined by commas (bus ids hold none).
  std::string mine;
  for (const auto& bus_id : backend::cuda_visible_devices()) mine += (mine.empty() ? "" : ",") + bus_id;
  std::string table;
  const auto lines = node.gather_strings(mine, 0);
  for (const auto& line : lines) table += line + "\n";
  node.broadcast_string(table, 0);

  std::vector<std::vector<std::string>> visible;
  std::istringstream rows(table);
  for (std::string row; std::getline(rows, row);) {
    visible.emplace_back();
    std::istringstream ids(row);
    for (std::string id; std::getline(ids, id, ',');) visible.back().push_back(id);
  }
  PHALANX_CHECK(static_cast<int>(visible.size()) == node.size(), "device table of ", visible.size(),
                " lines for ", node.size(), " local ranks");
  const auto assignment = backend::assign_local_gpus(visible);
  LocalGpu gpu;
  gpu.device = assignment[static_cast<std::size_t>(node.rank())];
  gpu.sees_gpu = !visible[static_cast<std::size_t>(node.rank())].empty();
  gpu.node_gpus = backend::distinct_gpus(visible);
  gpu.node_cpu_ranks = static_cast<int>(std::count(assignment.begin(), assignment.end(), -1));
  return gpu;
}

RankResources make_rank_resources(const std::string& device, int threads,
                                  const comm::Communicator& communicator) {
  // DESIGN §3: local ranks 0..G-1 take the node's G visible GPUs, one each; further local ranks
  // are CPU ranks. `device` may force either.
  LocalGpu gpu;
  gpu.node_cpu_ranks = communicator.local_size();
  if (device != "cpu") gpu = find_local_gpu(communicator);
  if (device == "cuda") {
    PHALANX_REQUIRE_INPUT(gpu.sees_gpu, "device: cuda, but rank ", communicator.rank(), " on ",
                          communicator.host_name(),
                          " finds no usable CUDA device (no GPU, no driver, or a build without the CUDA "
                          "backend); set device: cpu or auto");
    PHALANX_REQUIRE_INPUT(gpu.device >= 0, "device: cuda, but ", communicator.local_size(),
                          " ranks share the ", gpu.node_gpus, " GPU", gpu.node_gpus == 1 ? "" : "s", " of ",
                          communicator.host_name(), " and local rank ", communicator.local_rank(),
                          " has none of its own; start at most one rank per GPU, or use device: auto ",
                          "(further ranks then train on the CPU)");
  }
  RankResources resources;
  if (gpu.device >= 0) {
    resources.backend = backend::make_cuda_backend(gpu.device);
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
      const int cpu_ranks = std::max(1, gpu.node_cpu_ranks);
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
