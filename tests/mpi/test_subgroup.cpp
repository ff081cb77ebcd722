// Communicator::subgroup (MPI_Comm_create_group), what a sweep merges worker groups with: only the
// listed ranks take part, in the listed order, while the others go on with their own collectives;
// two disjoint subgroups form at the same time.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "phalanx/comm/communicator.hpp"

namespace phalanx::comm {
namespace {

TEST(Subgroup, ListedRanksInListedOrderWhileTheOthersRunTheirOwnCollectives) {
  const auto world = Communicator::world();
  // The last rank first, then the first: the new rank 0 is the last world rank.
  std::vector<int> ranks = {world.size() - 1};
  if (world.size() > 1) ranks.push_back(0);
  const bool member = std::find(ranks.begin(), ranks.end(), world.rank()) != ranks.end();
  if (member) {
    const Communicator merged = world.subgroup(ranks, 7);
    ASSERT_EQ(merged.size(), static_cast<int>(ranks.size()));
    const auto position = std::find(ranks.begin(), ranks.end(), world.rank()) - ranks.begin();
    EXPECT_EQ(merged.rank(), static_cast<int>(position));
    double value = world.rank() + 1.0;
    merged.allreduce_sum(&value, 1);
    EXPECT_EQ(value, world.size() > 1 ? world.size() + 1.0 : 1.0);
  } else {
    // The ranks left out form their own subgroup meanwhile, as other sweep groups would train.
    std::vector<int> others;
    for (int rank = 1; rank < world.size() - 1; ++rank) others.push_back(rank);
    const Communicator rest = world.subgroup(others, 8);
    ASSERT_EQ(rest.size(), static_cast<int>(others.size()));
    double value = 1.0;
    rest.allreduce_sum(&value, 1);
    EXPECT_EQ(value, static_cast<double>(others.size()));
  }
  world.barrier();
}

}  // namespace
}  // namespace phalanx::comm
