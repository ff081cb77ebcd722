// docs/DESIGN.md §3's GPU assignment of a node's ranks, from the PCI bus ids each rank sees.
#include <gtest/gtest.h>

#include "phalanx/backend/device_assignment.hpp"

namespace phalanx::backend {
namespace {

using Visible = std::vector<std::vector<std::string>>;
const std::string a = "0000:18:00.0", b = "0000:3B:00.0", c = "0000:86:00.0", d = "0000:AF:00.0";

TEST(DeviceAssignment, RanksThatSeeTheSameGpusTakeThemInLocalRankOrder) {
  // mpirun on a 4-GPU node with 6 ranks: ranks 0..3 get devices 0..3, ranks 4 and 5 the CPU.
  const Visible visible(6, {a, b, c, d});
  EXPECT_EQ(assign_local_gpus(visible), (std::vector<int>{0, 1, 2, 3, -1, -1}));
  EXPECT_EQ(distinct_gpus(visible), 4);
}

TEST(DeviceAssignment, RanksIsolatedToOneGpuEachDriveTheirOwn) {
  // srun --gpus-per-task=1: every rank sees one GPU, which it numbers 0. A rule on local rank
  // and device count alone would leave ranks 1..3 on the CPU.
  const Visible visible{{a}, {b}, {c}, {d}};
  EXPECT_EQ(assign_local_gpus(visible), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(distinct_gpus(visible), 4);
}

TEST(DeviceAssignment, TwoRanksNeverShareOneGpu) {
  // CUDA_VISIBLE_DEVICES=0 for both: NCCL refuses two ranks on one GPU, so the second is a CPU rank.
  EXPECT_EQ(assign_local_gpus({{a}, {a}}), (std::vector<int>{0, -1}));
  // Overlapping views: rank 1 skips the device rank 0 took and takes its second one.
  EXPECT_EQ(assign_local_gpus({{a, b}, {a, b}, {b, c}}), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(distinct_gpus({{a, b}, {a, b}, {b, c}}), 3);
}

TEST(DeviceAssignment, RanksWithoutGpusAreCpuRanks) {
  EXPECT_EQ(assign_local_gpus({{}, {}}), (std::vector<int>{-1, -1}));
  EXPECT_EQ(distinct_gpus({{}, {}}), 0);
  // A node where only some ranks see the GPU (the others hidden by CUDA_VISIBLE_DEVICES="").
  EXPECT_EQ(assign_local_gpus({{}, {a}, {}}), (std::vector<int>{-1, 0, -1}));
}

TEST(DeviceAssignment, EachRankTakesTheFirstFreeGpuInItsOwnNumbering) {
  // Rank 0 numbers b first and takes it; rank 1 then takes a, its device 0; rank 2 finds both
  // taken. The indices are into each rank's own list, as CUDA numbers devices per process.
  EXPECT_EQ(assign_local_gpus({{b, a}, {a, b}, {a, b}}), (std::vector<int>{0, 0, -1}));
}

}  // namespace
}  // namespace phalanx::backend
