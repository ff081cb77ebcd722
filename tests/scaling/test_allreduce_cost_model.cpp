// NCCL's all-reduce cost model against values worked out by hand: the ring's 2(n-1) steps and bus
// factor, its network steps across nodes, the tree's log-depth latency, the bottleneck link, and the
// choice of protocol and algorithm by size.
#include <gtest/gtest.h>

#include "phalanx/core/error.hpp"
#include "phalanx/scaling/allreduce_cost_model.hpp"

namespace phalanx::testing {
namespace {

using namespace phalanx::scaling;

Fabric fabric(IntraNodeLink link, double intra_gbytes, double network_gbit_per_node) {
  Fabric result;
  result.name = "test";
  result.intra_node_link = link;
  result.intra_node_bandwidth = intra_gbytes * 1e9;
  result.network_bandwidth_per_node = network_gbit_per_node * 1e9 / 8;
  return result;
}

TEST(AllreduceCostModel, RingWithinOneNodeIsLatencyPlusSizeOverBusBandwidthTimesNOverTwoNMinusOne) {
  // 8 GPUs on NVLink at 150 GB/s, 100 MB, Simple: 14 steps of 3.4 us after a base of 8.4 us, and the
  // buffer moves at 150 GB/s x 8 / 14.
  const AllreduceEstimate ring = estimate_allreduce(Algorithm::Ring, Protocol::Simple, 100'000'000, {1, 8},
                                                    fabric(IntraNodeLink::NvLink, 150, 0));
  EXPECT_NEAR(ring.latency, 56.0e-6, 1e-12);
  EXPECT_NEAR(ring.bandwidth, 150e9 * 8 / 14, 1);
  EXPECT_NEAR(ring.seconds, 56.0e-6 + 1e8 / (150e9 * 8 / 14), 1e-12);
}

TEST(AllreduceCostModel, RingAcrossNodesTakesTheNetworkAsBottleneckAndPaysNetworkLatencyPerCrossing) {
  // 4 nodes x 8 GPUs on PCIe 3.0 (15.75 GB/s) and 25 Gbit/s: 62 steps, 6 of them on the network; the
  // steps' sum times NCCL's plateau factor for a ring across nodes, 1.4 from compute capability 8.0.
  // The 3.125 GB/s NIC carries one NCCL channel of 3.0 GB/s.
  const AllreduceEstimate ring = estimate_allreduce(Algorithm::Ring, Protocol::Simple, 100'000'000, {4, 8},
                                                    fabric(IntraNodeLink::Pcie, 15.75, 25));
  EXPECT_NEAR(ring.latency, 1.4 * (8.4 + 56 * 5.7 + 6 * 14.0) * 1e-6, 1e-12);
  EXPECT_NEAR(ring.bandwidth, 3.0e9 * 32 / 62, 1e-3);
  EXPECT_NEAR(ring.seconds, 1.4 * 411.6e-6 + 1e8 / (3.0e9 * 32 / 62), 1e-9);
}

TEST(AllreduceCostModel, TheRingPlateauIsLargerBeforeAmpereAndOnlyForSimpleAcrossNodes) {
  Fabric pascal = fabric(IntraNodeLink::Pcie, 15.75, 25);
  pascal.gpu_compute_capability = 6.0;
  const double steps = (8.4 + 56 * 5.7 + 6 * 14.0) * 1e-6;
  EXPECT_NEAR(estimate_allreduce(Algorithm::Ring, Protocol::Simple, 1 << 20, {4, 8}, pascal).latency,
              1.9 * steps, 1e-12);
  pascal.gpu_compute_capability = 8.0;
  EXPECT_NEAR(estimate_allreduce(Algorithm::Ring, Protocol::Simple, 1 << 20, {4, 8}, pascal).latency,
              1.4 * steps, 1e-12);
  // Not on one node, not for LL, and not where a rank's share is under 64 bytes (32 ranks, 2 KiB).
  EXPECT_NEAR(estimate_allreduce(Algorithm::Ring, Protocol::Simple, 1 << 20, {1, 8}, pascal).latency,
              (8.4 + 14 * 5.7) * 1e-6, 1e-12);
  EXPECT_NEAR(estimate_allreduce(Algorithm::Ring, Protocol::LowLatency, 1 << 20, {4, 8}, pascal).latency,
              (6.6 + 56 * 1.0 + 6 * 2.7) * 1e-6, 1e-12);
  EXPECT_NEAR(estimate_allreduce(Algorithm::Ring, Protocol::Simple, 2047, {4, 8}, pascal).latency, steps,
              1e-12);
  EXPECT_NEAR(estimate_allreduce(Algorithm::Ring, Protocol::Simple, 2048, {4, 8}, pascal).latency,
              1.4 * steps, 1e-12);
}

TEST(AllreduceCostModel, TreeLatencyGrowsWithLogOfNodesAndItsBandwidthIsHalfTheBus) {
  const Fabric roce = fabric(IntraNodeLink::Pcie, 15.75, 25);
  const AllreduceEstimate tree =
      estimate_allreduce(Algorithm::Tree, Protocol::Simple, 100'000'000, {4, 8}, roce);
  EXPECT_NEAR(tree.latency, (8.4 + 2 * (7 * 4.0 + 2 * 14.0)) * 1e-6, 1e-12);
  // 100 MB is 2^20.6 x 64 bytes: NCCL's tree correction for Simple at index 20 is 0.8.
  EXPECT_NEAR(tree.bandwidth, 3.0e9 * 0.92 * 0.5 * 0.8, 1e-3);
  // 64 nodes: depth 6 against the ring's 126 network steps.
  const AllreduceEstimate deep = estimate_allreduce(Algorithm::Tree, Protocol::Simple, 4, {64, 8}, roce);
  EXPECT_NEAR(deep.latency, (8.4 + 2 * (7 * 4.0 + 6 * 14.0)) * 1e-6, 1e-12);
}

TEST(AllreduceCostModel, SmallBuffersOnManyNodesGoByTreeAndLargeOnesByRing) {
  const Fabric roce = fabric(IntraNodeLink::Pcie, 15.75, 25);
  const Topology many{64, 4};
  EXPECT_EQ(fastest_allreduce(4096, many, roce).algorithm, Algorithm::Tree);
  EXPECT_EQ(fastest_allreduce(std::size_t{256} << 20, many, roce).algorithm, Algorithm::Ring);
  EXPECT_EQ(fastest_allreduce(std::size_t{256} << 20, many, roce).protocol, Protocol::Simple);
  // LL's low latency wins for a few bytes, at half the bandwidth.
  EXPECT_EQ(best_protocol(Algorithm::Ring, 64, {1, 8}, roce).protocol, Protocol::LowLatency);
}

TEST(AllreduceCostModel, TheTreeCorrectionFollowsTheBufferSizeAndEndsAt512MiB) {
  const Fabric roce = fabric(IntraNodeLink::Pcie, 15.75, 25);
  const double full = 3.0e9 * 0.92 * 0.5;
  const auto bandwidth = [&](std::size_t bytes) {
    return estimate_allreduce(Algorithm::Tree, Protocol::Simple, bytes, {4, 8}, roce).bandwidth;
  };
  EXPECT_NEAR(bandwidth(63), full, 1e-3);                           // under 64 bytes: none
  EXPECT_NEAR(bandwidth(64), 0.9 * full, 1e-3);                     // index 0
  EXPECT_NEAR(bandwidth(std::size_t{64} << 11), 0.5 * full, 1e-3);  // index 11
  EXPECT_NEAR(bandwidth((std::size_t{64} << 12) - 1), 0.5 * full, 1e-3);
  EXPECT_NEAR(bandwidth(std::size_t{64} << 22), 0.9 * full, 1e-3);  // 256 MiB, index 22
  EXPECT_NEAR(bandwidth(std::size_t{64} << 23), full, 1e-3);        // 512 MiB on: none
  // LL128 has its own row: index 10 is 0.6.
  EXPECT_NEAR(
      estimate_allreduce(Algorithm::Tree, Protocol::LowLatency128, std::size_t{64} << 10, {4, 8}, roce)
          .bandwidth,
      3.0e9 * 0.92 * 120.0 / 128.0 * 0.5 * 0.6, 1e-3);
}

TEST(AllreduceCostModel, RingsOnlyAsNcclBefore24HadThem) {
  const Fabric roce = fabric(IntraNodeLink::Pcie, 15.75, 25);
  const Topology many{64, 4};
  EXPECT_EQ(fastest_allreduce(4096, many, roce).algorithm, Algorithm::Tree);
  const AlgorithmChoice rings = parse_algorithm_choice("ring", "--nccl-algo");
  const AllreduceEstimate ring = fastest_allreduce(4096, many, roce, rings);
  EXPECT_EQ(ring.algorithm, Algorithm::Ring);
  EXPECT_EQ(ring.seconds, best_protocol(Algorithm::Ring, 4096, many, roce).seconds);
  const AlgorithmChoice trees = parse_algorithm_choice("tree", "--nccl-algo");
  EXPECT_EQ(fastest_allreduce(std::size_t{256} << 20, many, roce, trees).algorithm, Algorithm::Tree);
  EXPECT_EQ(name_of(parse_algorithm_choice("tree,ring", "--nccl-algo")), "ring,tree");
  for (const std::string text : {"", "ring,", "ring,ring", "nvls", "Ring"}) {
    try {
      parse_algorithm_choice(text, "--nccl-algo");
      ADD_FAILURE() << "'" << text << "' was accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.exit_status(), 2);
      EXPECT_NE(std::string(error.what()).find("--nccl-algo"), std::string::npos) << error.what();
    }
  }
}

TEST(AllreduceCostModel, OneRankCostsNothingAndNodesWithoutANetworkAreRefused) {
  const Fabric single_node = fabric(IntraNodeLink::NvLink, 450, 0);
  EXPECT_EQ(fastest_allreduce(1 << 20, {1, 1}, single_node).seconds, 0.0);
  try {
    fastest_allreduce(1 << 20, {2, 8}, single_node);
    FAIL() << "two nodes without a network were accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("no network"), std::string::npos) << error.what();
  }
}

TEST(AllreduceCostModel, NetworkPerGpuScalesWithTheGpusOfTheNode) {
  // One 400 Gbit/s NIC (50 GB/s) per Hopper GPU: NCCL's channels carry 48 GB/s through each.
  Fabric ndr = fabric(IntraNodeLink::NvLink, 450, 0);
  ndr.network_bandwidth_per_gpu = 400e9 / 8;
  EXPECT_NEAR(bottleneck_bus_bandwidth({2, 8}, ndr), 8 * 48e9, 1);
  EXPECT_NEAR(bottleneck_bus_bandwidth({2, 4}, ndr), 4 * 48e9, 1);
  EXPECT_NEAR(bottleneck_bus_bandwidth({1, 8}, ndr), 450e9, 1);
}

TEST(AllreduceCostModel, EachNetworkInterfaceCarriesTheNcclChannelSpeedsThatFitInIt) {
  // NCCL's search takes the fastest channel speed of its list for the GPU generation that fits in
  // a NIC, and as many channels of it as fit.
  Fabric network = fabric(IntraNodeLink::NvLink, 1000, 25);
  network.gpu_compute_capability = 7.0;
  EXPECT_NEAR(network_channel_bandwidth({2, 8}, network), 3.0e9, 1);  // 3.125 GB/s: one of 3.0
  network.network_bandwidth_per_node = 400e9 / 8;                     // 4 x 100 Gbit/s
  network.network_interfaces_per_node = 4;
  EXPECT_NEAR(network_channel_bandwidth({2, 8}, network), 4 * 12e9, 1);  // 12.5 GB/s each: 12.0
  network.network_interfaces_per_node = 1;                               // one 400 Gbit/s NIC
  EXPECT_NEAR(network_channel_bandwidth({2, 8}, network), 48e9, 1);      // before Hopper: 48
  network.gpu_compute_capability = 9.0;
  network.network_bandwidth_per_node = 800e9 / 8;  // 100 GB/s: two channels of Hopper's 48
  EXPECT_NEAR(network_channel_bandwidth({2, 8}, network), 96e9, 1);
  network.gpu_compute_capability = 10.0;  // Blackwell's list has 96
  EXPECT_NEAR(network_channel_bandwidth({2, 8}, network), 96e9, 1);
  network.network_bandwidth_per_node = 0.1e9 / 8 * 8;  // 0.1 GB/s, below the list: as it is
  EXPECT_NEAR(network_channel_bandwidth({2, 8}, network), 0.1e9, 1);
  // Within one node the network plays no part.
  EXPECT_NEAR(bottleneck_bus_bandwidth({1, 8}, network), 1000e9, 1);
}

}  // namespace
}  // namespace phalanx::testing
