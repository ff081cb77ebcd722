// The all-reduce's time as NCCL's tuner estimates it (src/graph/tuning.cc there): per algorithm
// (ring, tree) and protocol (LL, LL128, Simple), a latency (a base plus one hardware latency per
// step the algorithm takes, NVLink/PCIe within a node, the network between nodes; an inter-node
// ring's scaled by the tuner's "plateau" factor) plus the bytes over the algorithm's bandwidth (a
// tree's corrected by the tuner's factor for the buffer's size). The bandwidth is the slowest link
// a byte crosses: the GPU's link within one node, the node's network share once the ranks span
// nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "phalanx/scaling/fabric.hpp"

namespace phalanx::scaling {

enum class Algorithm { Ring, Tree };
enum class Protocol { LowLatency, LowLatency128, Simple };
std::string name_of(Algorithm algorithm);
std::string name_of(Protocol protocol);

// The largest job predicted: 2^20 ranks, up to 1024 GPUs on a node (an NVLink domain of racks
// counts as one node). Beyond them a slip on the command line, not a system; within them every
// count, the ranks' product and a global batch stay far from int64's end.
inline constexpr std::int64_t most_ranks = std::int64_t{1} << 20;
inline constexpr int most_gpus_per_node = 1024;

struct Topology {
  int nodes = 1, gpus_per_node = 1;
  std::int64_t ranks() const { return std::int64_t{nodes} * gpus_per_node; }
};

// The algorithms NCCL may choose from, as NCCL_ALGO restricts them. NCCL before 2.4 (December
// 2018) had rings only.
struct AlgorithmChoice {
  bool ring = true, tree = true;
};
// "ring", "tree" or "ring,tree" (either order); throws InvalidInput naming `option` otherwise.
AlgorithmChoice parse_algorithm_choice(const std::string& text, const std::string& option);
std::string name_of(AlgorithmChoice choice);

struct AllreduceEstimate {
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  double latency = 0;    // seconds
  double bandwidth = 0;  // algorithm bandwidth: bytes of the buffer per second
  double seconds = 0;    // latency + bytes / bandwidth; 0 for one rank
};

// What NCCL's channels carry through a node's network interfaces: per interface, the channel speeds
// of NCCL's topology search that fit in it (a 25 Gbit/s NIC: 3.0 GB/s), times the interfaces.
double network_channel_bandwidth(const Topology& topology, const Fabric& fabric);
// Bus bandwidth of the slowest link: the GPU's intra-node link on one node, else the smaller of it
// and the node's network channels (every ring or tree crosses a node's NICs once per direction).
// Throws InvalidInput when the ranks span nodes and the fabric has no network.
double bottleneck_bus_bandwidth(const Topology& topology, const Fabric& fabric);

AllreduceEstimate estimate_allreduce(Algorithm algorithm, Protocol protocol, std::size_t bytes,
                                     const Topology& topology, const Fabric& fabric);
// The protocol NCCL would pick for this algorithm: the fastest.
AllreduceEstimate best_protocol(Algorithm algorithm, std::size_t bytes, const Topology& topology,
                                const Fabric& fabric);
// Of a ring and a tree estimate (each at its best protocol), the faster of those `allowed`.
AllreduceEstimate faster_allowed(const AllreduceEstimate& ring, const AllreduceEstimate& tree,
                                 AlgorithmChoice allowed);
// The algorithm and protocol NCCL would pick: the fastest of those `allowed`.
AllreduceEstimate fastest_allreduce(std::size_t bytes, const Topology& topology, const Fabric& fabric,
                                    AlgorithmChoice allowed = {});

}  // namespace phalanx::scaling
