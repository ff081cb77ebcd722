// NCCL's all-reduce cost model, written from the structure of its tuner: latencies per algorithm,
// protocol and link class (the tuner's published defaults), bandwidth factors per protocol, the ring's
// 2(n-1) steps with 2(nodes-1) of them on the network and its plateau factor, the tree's depth
// log2(nodes) across nodes and its correction by size.
#include "phalanx/scaling/allreduce_cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "phalanx/core/error.hpp"

namespace phalanx::scaling {
namespace {

constexpr int algorithm_count = 2, protocol_count = 3;
// Microseconds, indexed [algorithm][protocol] (ring, tree; LL, LL128, Simple): the fixed cost of
// launching one collective, and each step's cost on NVLink, PCIe and the network (NCCL's defaults).
constexpr double base_latency[algorithm_count][protocol_count] = {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}};
constexpr double nvlink_latency[algorithm_count][protocol_count] = {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}};
constexpr double pcie_latency[algorithm_count][protocol_count] = {{1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}};
constexpr double network_latency[algorithm_count][protocol_count] = {{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}};

int index_of(Algorithm algorithm) {
  return algorithm == Algorithm::Ring ? 0 : 1;
}
int index_of(Protocol protocol) {
  return protocol == Protocol::LowLatency ? 0 : protocol == Protocol::LowLatency128 ? 1 : 2;
}

// The share of the links' bandwidth a protocol carries as data: LL sends a flag with every 4 bytes of
// data in 8, LL128 one with every 120 bytes in 128; Simple moves only data. The tree's Simple
// loses some to its pipeline, and its LL a little more than the ring's.
double protocol_efficiency(Algorithm algorithm, Protocol protocol, const Topology& topology) {
  if (algorithm == Algorithm::Ring) {
    if (protocol == Protocol::LowLatency) return 0.5;
    if (protocol == Protocol::LowLatency128) return 0.92;
    return 1.0;
  }
  if (protocol == Protocol::LowLatency) return 0.92 / 3.8;
  if (protocol == Protocol::LowLatency128) return 0.92 * (topology.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0);
  return 0.92;
}

// NCCL's tuner corrects the tree's bandwidth by the buffer's size, where its trees fall short of the
// model (pipelining medium buffers): per protocol (LL, LL128, Simple), indexed by floor(log2(bytes /
// 64)) from 64 B; from 512 MiB on (index 23) no correction.
constexpr int tree_correction_sizes = 23;
constexpr double tree_correction[protocol_count][tree_correction_sizes] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

// An inter-node ring's latency grows past the sum of its steps' (the tuner's "plateau" of the ring):
// by 1.9 on GPUs before compute capability 8.0, 1.4 on later ones. NCCL applies it where each rank's
// share per channel is at least 64 bytes; the model takes one channel there, which differs only for
// buffers of under 64 bytes per rank and channel.
double ring_plateau(std::size_t bytes, const Topology& topology, const Fabric& fabric) {
  if (topology.nodes <= 1 || bytes / static_cast<std::size_t>(topology.ranks()) < 64) return 1.0;
  return fabric.gpu_compute_capability < 8.0 ? 1.9 : 1.4;
}

// NCCL's topology search gives each channel across nodes one speed from a fixed list (search.cc's
// speedArrayInter, one list per GPU generation, GB/s): the largest a path can carry, and as many
// channels at it as the network interface has room for. So a 25 Gbit/s NIC (3.125 GB/s) carries
// one channel of 3.0 GB/s, and the tuner's bus bandwidth is 3.0.
constexpr double channel_speeds_before_hopper[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                                   7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double channel_speeds_hopper[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                            15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double channel_speeds_blackwell[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                               20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

template <std::size_t count>
double interface_bandwidth(double interface_bytes_per_second, const double (&speeds)[count]) {
  const double gbytes = interface_bytes_per_second / 1e9;
  for (const double speed : speeds)
    if (speed <= gbytes) return std::floor(gbytes / speed) * speed * 1e9;
  // Slower than the list: NCCL's search finds no channel and falls back to one of 0.1 GB/s; the
  // model keeps the NIC's own figure, which is what the bytes get.
  return interface_bytes_per_second;
}

int log2_floor(std::size_t value) {
  int result = 0;
  while (value > 1) {
    value >>= 1;
    ++result;
  }
  return result;
}

}  // namespace

std::string name_of(Algorithm algorithm) {
  return algorithm == Algorithm::Ring ? "ring" : "tree";
}
std::string name_of(Protocol protocol) {
  return protocol == Protocol::LowLatency ? "LL" : protocol == Protocol::LowLatency128 ? "LL128" : "Simple";
}

double network_channel_bandwidth(const Topology& topology, const Fabric& fabric) {
  const int interfaces = fabric.network_interfaces(topology.gpus_per_node);
  const double each = fabric.node_network_bandwidth(topology.gpus_per_node) / interfaces;
  const double capability = fabric.gpu_compute_capability;
  return interfaces * (capability >= 10.0  ? interface_bandwidth(each, channel_speeds_blackwell)
                       : capability >= 9.0 ? interface_bandwidth(each, channel_speeds_hopper)
                                           : interface_bandwidth(each, channel_speeds_before_hopper));
}

double bottleneck_bus_bandwidth(const Topology& topology, const Fabric& fabric) {
  PHALANX_REQUIRE_INPUT(topology.nodes >= 1 && topology.gpus_per_node >= 1,
                        "the nodes and the GPUs per node must be >= 1 (got ", topology.nodes, " and ",
                        topology.gpus_per_node, ")");
  PHALANX_REQUIRE_INPUT(fabric.intra_node_bandwidth > 0, "fabric ", fabric.name,
                        " has no intra-node bandwidth");
  if (topology.nodes == 1) return fabric.intra_node_bandwidth;
  PHALANX_REQUIRE_INPUT(fabric.has_network(), "fabric ", fabric.name, " has no network between nodes, and ",
                        topology.nodes, " nodes need one (a single-node fabric takes --nodes 1)");
  return std::min(fabric.intra_node_bandwidth, network_channel_bandwidth(topology, fabric));
}

AllreduceEstimate estimate_allreduce(Algorithm algorithm, Protocol protocol, std::size_t bytes,
                                     const Topology& topology, const Fabric& fabric) {
  AllreduceEstimate estimate{algorithm, protocol, 0, 0, 0};
  const std::int64_t ranks = topology.ranks();
  const double bus_bandwidth = bottleneck_bus_bandwidth(topology, fabric);
  if (ranks == 1) return estimate;
  const int a = index_of(algorithm), p = index_of(protocol);
  const double intra_step =
      (fabric.intra_node_link == IntraNodeLink::NvLink ? nvlink_latency : pcie_latency)[a][p] * 1e-6;
  const double network_step = network_latency[a][p] * 1e-6 + fabric.network_latency;
  const double data_bandwidth = bus_bandwidth * protocol_efficiency(algorithm, protocol, topology);
  estimate.latency = base_latency[a][p] * 1e-6;
  if (algorithm == Algorithm::Ring) {
    // Reduce-scatter then all-gather: 2(n-1) steps, each moving 1/n of the buffer over every link,
    // so the buffer moves at bus bandwidth x n / (2(n-1)). A ring over several nodes leaves and
    // enters each node once per pass: 2(nodes-1) of its steps cross the network.
    const std::int64_t steps = 2 * (ranks - 1);
    const int network_steps = topology.nodes > 1 ? 2 * (topology.nodes - 1) : 0;
    estimate.latency += (steps - network_steps) * intra_step + network_steps * network_step;
    if (protocol == Protocol::Simple) estimate.latency *= ring_plateau(bytes, topology, fabric);
    estimate.bandwidth = data_bandwidth * ranks / steps;
  } else {
    // Up a chain within the node and a tree across nodes, then down again: the latency grows with
    // the depth, not the ranks; every byte travels up and down, so at half the bus bandwidth.
    estimate.latency +=
        2 * ((topology.gpus_per_node - 1) * intra_step + log2_floor(topology.nodes) * network_step);
    estimate.bandwidth = data_bandwidth * 0.5;
    if (bytes >= 64) {
      const int size_index = log2_floor(bytes / 64);
      if (size_index < tree_correction_sizes) estimate.bandwidth *= tree_correction[p][size_index];
    }
  }
  estimate.seconds = estimate.latency + static_cast<double>(bytes) / estimate.bandwidth;
  return estimate;
}

AllreduceEstimate best_protocol(Algorithm algorithm, std::size_t bytes, const Topology& topology,
                                const Fabric& fabric) {
  AllreduceEstimate best = estimate_allreduce(algorithm, Protocol::Simple, bytes, topology, fabric);
  for (const Protocol protocol : {Protocol::LowLatency, Protocol::LowLatency128}) {
    // NCCL enables LL128 only where the GPUs of a node talk over NVLink (tuning.cc's
    // typeIntra <= PATH_NVB): over PCIe it never chooses it.
    if (protocol == Protocol::LowLatency128 && fabric.intra_node_link == IntraNodeLink::Pcie) continue;
    const AllreduceEstimate other = estimate_allreduce(algorithm, protocol, bytes, topology, fabric);
    if (other.seconds < best.seconds) best = other;
  }
  return best;
}

AllreduceEstimate faster_allowed(const AllreduceEstimate& ring, const AllreduceEstimate& tree,
                                 AlgorithmChoice allowed) {
  PHALANX_CHECK(allowed.ring || allowed.tree, "no all-reduce algorithm allowed");
  if (!allowed.tree) return ring;
  if (!allowed.ring) return tree;
  return tree.seconds < ring.seconds ? tree : ring;
}

AllreduceEstimate fastest_allreduce(std::size_t bytes, const Topology& topology, const Fabric& fabric,
                                    AlgorithmChoice allowed) {
  return faster_allowed(best_protocol(Algorithm::Ring, bytes, topology, fabric),
                        best_protocol(Algorithm::Tree, bytes, topology, fabric), allowed);
}

AlgorithmChoice parse_algorithm_choice(const std::string& text, const std::string& option) {
  AlgorithmChoice choice{false, false};
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string name = text.substr(begin, end - begin);
    bool& chosen = name == "ring" ? choice.ring : choice.tree;
    PHALANX_REQUIRE_INPUT((name == "ring" || name == "tree") && !chosen, option, ": '", text,
                          "' must be ring, tree or ring,tree (each once)");
    chosen = true;
    begin = end + 1;
  }
  return choice;
}

std::string name_of(AlgorithmChoice choice) {
  return choice.ring && choice.tree ? "ring,tree" : choice.ring ? "ring" : "tree";
}

}  // namespace phalanx::scaling
