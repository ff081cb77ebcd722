// Fabric: the links a data-parallel job's all-reduce crosses, as published figures: the GPU's link
// within a node (NVLink/NVSwitch or PCIe) and the network between nodes. Presets carry the figures of
// the systems docs/SCALING.md cites; a JSON file describes any other.
#pragma once

#include <string>
#include <vector>

namespace phalanx::scaling {

// Which of NCCL's hardware latency classes the intra-node link falls in.
enum class IntraNodeLink { NvLink, Pcie };

struct Fabric {
  std::string name;    // the preset's name or the file's path
  std::string source;  // where the figures come from (printed with a prediction)
  IntraNodeLink intra_node_link = IntraNodeLink::NvLink;
  double intra_node_bandwidth = 0;  // bytes/s one GPU sends within its node (one direction)
  // Bytes/s a node sends into the network (one direction): the per-node figure plus the per-GPU
  // figure times the GPUs of the node. Both 0: a single-node fabric.
  double network_bandwidth_per_node = 0, network_bandwidth_per_gpu = 0;
  // The network interfaces (NICs) that share the per-node figure; a per-GPU figure is one per GPU.
  int network_interfaces_per_node = 1;
  double network_latency = 0;  // seconds a network hop adds to NCCL's own per-hop latency
  // The GPUs' CUDA compute capability (6.0 Pascal, 7.0 Volta, 9.0 Hopper): NCCL's tuner scales an
  // inter-node ring's latency by a "plateau" factor that is larger before 8.0 (Ampere).
  double gpu_compute_capability = 9.0;

  bool has_network() const { return network_bandwidth_per_node > 0 || network_bandwidth_per_gpu > 0; }
  double node_network_bandwidth(int gpus_per_node) const {
    return network_bandwidth_per_node + network_bandwidth_per_gpu * gpus_per_node;
  }
  int network_interfaces(int gpus_per_node) const {
    return network_bandwidth_per_gpu > 0 ? gpus_per_node : network_interfaces_per_node;
  }
};

std::vector<std::string> fabric_preset_names();
// A preset by name, or a JSON fabric file (docs/SCALING.md) when `name_or_path` names none.
// Throws InvalidInput naming the file and the field for a file that is malformed or lacks a figure.
Fabric find_fabric(const std::string& name_or_path);
Fabric read_fabric_file(const std::string& path);

}  // namespace phalanx::scaling
