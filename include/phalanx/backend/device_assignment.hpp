// Which GPU each rank of a node drives (docs/DESIGN.md §3: local ranks 0..G-1 take the node's G GPUs, one
// each; further local ranks are CPU ranks), decided from what every local rank can see. Ranks do
// not all see the same devices: `srun --gpus-per-task=1` or a per-rank CUDA_VISIBLE_DEVICES gives
// every rank one GPU that it numbers 0, and a rule on local rank and device count alone would then
// leave every rank but the first on the CPU. PCI bus ids tell the physical devices apart.
#pragma once

#include <string>
#include <vector>

namespace phalanx::backend {

// `visible[r]` lists the PCI bus ids of the devices local rank r sees, in its own CUDA order.
// Returns, for each local rank in order, the index into its own list of the device it drives, or
// -1 for a CPU rank: each rank takes the first device it sees that no lower local rank has taken.
// When every rank sees the same G devices, local rank r < G drives device r.
std::vector<int> assign_local_gpus(const std::vector<std::vector<std::string>>& visible);

// The physical GPUs among `visible` (distinct bus ids).
int distinct_gpus(const std::vector<std::vector<std::string>>& visible);

}  // namespace phalanx::backend
