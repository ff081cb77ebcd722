// The central property of data parallelism (docs/DESIGN.md §6): N ranks with local batch G/N, their
// gradients summed by GradSync, take the same steps as 1 rank with batch G. Every rank also
// trains the 1-rank reference locally on a communicator of its own, so the comparison needs no
// files; and the distributed run repeated gives bitwise the same weights.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "small_training.hpp"

namespace phalanx {
namespace {

using testing::SmallTraining;

constexpr int global_batch = 16;

std::vector<int> equal_split(int world_size) {
  return std::vector<int>(static_cast<std::size_t>(world_size), global_batch / world_size);
}

TEST(DataParallel, NRanksEqualOneRankWithTheGlobalBatch) {
  const auto world = comm::Communicator::world();
  const auto split = testing::random_split("train", 160, 5);
  const SmallTraining training{.seed = 42};
  const auto distributed = testing::train_small_cnn(world, split, equal_split(world.size()), training);
  const auto alone = world.split(world.rank(), 0);
  const auto reference = testing::train_small_cnn(alone, split, {global_batch}, training);
  ASSERT_EQ(distributed.size(), reference.size());
  // Only the float summation order differs (per-rank partial sums, then the all-reduce): about
  // 1e-7 relative per step, grown by momentum over 6 steps; 1e-5 leaves a wide margin yet
  // catches any real error (a wrong scale or a missing rank's share moves weights by >1e-3).
  EXPECT_LT(testing::worst_relative_difference(distributed, reference), 1e-5)
      << "world size " << world.size();
  // The weights moved: the comparison is not between two untouched initialisations.
  EXPECT_GT(testing::worst_relative_difference(reference, testing::initial_small_cnn_weights(training.seed)),
            1e-3);
}

// train.clip_grad_norm: every rank clips the summed gradients by their norm, computed locally
// (no collective of its own), so N ranks still take the 1-rank steps.
TEST(DataParallel, ClippedGradientsOnNRanksEqualOneRank) {
  const auto world = comm::Communicator::world();
  const auto split = testing::random_split("train", 160, 5);
  std::vector<double> distributed_norms, reference_norms;
  // Below the small CNN's gradient norms on these images (about 1 to 3), so every step clips.
  SmallTraining training{.seed = 42, .clip_grad_norm = 0.25, .gradient_norms = &distributed_norms};
  const auto distributed = testing::train_small_cnn(world, split, equal_split(world.size()), training);
  training.gradient_norms = &reference_norms;
  const auto alone = world.split(world.rank(), 0);
  const auto reference = testing::train_small_cnn(alone, split, {global_batch}, training);
  ASSERT_EQ(distributed.size(), reference.size());
  EXPECT_LT(testing::worst_relative_difference(distributed, reference), 1e-5)
      << "world size " << world.size();
  ASSERT_EQ(distributed_norms.size(), reference_norms.size());
  for (std::size_t step = 0; step < reference_norms.size(); ++step) {
    EXPECT_NEAR(distributed_norms[step], reference_norms[step], 1e-5 * reference_norms[step])
        << "step " << step;
    EXPECT_GT(reference_norms[step], *training.clip_grad_norm) << "step " << step << " did not clip";
  }
  // The clip changed the trajectory: the unclipped run ends elsewhere.
  const auto unclipped = testing::train_small_cnn(alone, split, {global_batch}, SmallTraining{.seed = 42});
  EXPECT_GT(testing::worst_relative_difference(unclipped, reference), 1e-3);
}

TEST(DataParallel, RepeatedRunsAreBitwiseIdentical) {
  const auto world = comm::Communicator::world();
  const auto split = testing::random_split("train", 160, 5);
  const auto first = testing::train_small_cnn(world, split, equal_split(world.size()), {});
  const auto second = testing::train_small_cnn(world, split, equal_split(world.size()), {});
  ASSERT_EQ(first.size(), second.size());
  EXPECT_EQ(0, std::memcmp(first.data(), second.data(), first.size() * sizeof(float)));
}

}  // namespace
}  // namespace phalanx
