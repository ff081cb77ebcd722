// Device and thread selection: GPUs by PCI bus id over the node's ranks, CPU threads from the
// cores the node's CPU ranks share.
#include "phalanx/train/rank_resources.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/backend/device_assignment.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/usable_cores.hpp"

namespace phalanx::train {

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

RankResources make_rank_resources(config::Device device, int threads,
                                  const comm::Communicator& communicator) {
  // docs/DESIGN.md §3: local ranks 0..G-1 take the node's G visible GPUs, one each; further local ranks
  // are CPU ranks. `device` may force either.
  LocalGpu gpu;
  gpu.node_cpu_ranks = communicator.local_size();
  if (device != config::Device::Cpu) gpu = find_local_gpu(communicator);
  if (device == config::Device::Cuda) {
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
      // The node's cores (within the group's CPU quota, which its ranks share) divided among its
      // CPU ranks, but never more than the cores this rank may run on: Open MPI binds small jobs
      // to one core each, and threads beyond that only fight.
      const int cpu_ranks = std::max(1, gpu.node_cpu_ranks);
      threads = std::max(1, std::min(usable_cores(), node_cores() / cpu_ranks));
    }
  }
  resources.threads = threads;
  resources.backend = backend::make_cpu_backend(threads);
  return resources;
}

}  // namespace phalanx::train
