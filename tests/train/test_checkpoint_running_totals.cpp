// The checkpoint keeps every rank's running loss totals bit for bit, reads a checkpoint written
// before they were stored as "none", and refuses damaged totals naming the file and dataset.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/nn/parameter_registry.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "support/test_support.hpp"
#include "train/checkpoint_editing.hpp"
#include "train/checkpoint_test_model.hpp"

namespace phalanx::train {
namespace {

using phalanx::testing::expect_resealed_edit_refused;
using phalanx::testing::replace_int64_dataset;
using phalanx::testing::ScratchDirectory;

// Sums that no decimal round trip (e.g. through JSON text) would keep exactly.
std::vector<RunningTotals> three_ranks() {
  return {{0.1 + 0.2, 96, std::nextafter(7.25, 8.0), 30, 64},
          {1.0 / 3.0, 96, 0.0, 0, 0},
          {12345.678901234567, 128, 5e-324, 1, 1}};
}

struct SmallModel : phalanx::testing::CheckpointTestModel {
  void write(const std::string& path, const std::vector<RunningTotals>& totals, int world_size = 3) {
    const TrainingPosition position{11, 0, 11, 11 * 96};
    write_checkpoint(path, *backend, registry, nullptr, position, world_size, 5, "name: test\n", nullptr, {},
                     totals);
  }
};

TEST(CheckpointRunningTotals, EveryRanksTotalsComeBackBitForBit) {
  ScratchDirectory scratch("checkpoint_running_totals_round_trip");
  SmallModel model;
  const std::string path = scratch.file("step-11.h5");
  const auto written = three_ranks();
  model.write(path, written);
  const CheckpointHeader header = read_checkpoint_header(path);
  ASSERT_EQ(header.running_totals.size(), written.size());
  for (std::size_t rank = 0; rank < written.size(); ++rank) {
    const RunningTotals& read = header.running_totals[rank];
    EXPECT_EQ(std::bit_cast<std::uint64_t>(read.epoch_loss_sum),
              std::bit_cast<std::uint64_t>(written[rank].epoch_loss_sum))
        << "rank " << rank;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(read.interval_loss_sum),
              std::bit_cast<std::uint64_t>(written[rank].interval_loss_sum))
        << "rank " << rank;
    EXPECT_EQ(read, written[rank]) << "rank " << rank;
  }
  // The weights load as before beside the new datasets.
  EXPECT_NO_THROW(load_checkpoint(path, *model.backend, model.registry, nullptr));
}

TEST(CheckpointRunningTotals, ACheckpointWithoutThemReadsAsNone) {
  // What every checkpoint written before the totals were stored looks like.
  ScratchDirectory scratch("checkpoint_running_totals_none");
  SmallModel model;
  const std::string path = scratch.file("old.h5");
  model.write(path, {});
  const CheckpointHeader header = read_checkpoint_header(path);
  EXPECT_TRUE(header.running_totals.empty());
  EXPECT_EQ(header.position.step_in_epoch, 11);
}

TEST(CheckpointRunningTotals, DamagedTotalsAreRefusedNamingFileAndDataset) {
  ScratchDirectory scratch("checkpoint_running_totals_damaged");
  SmallModel model;

  const std::string short_list = scratch.file("short.h5");
  model.write(short_list, three_ranks());
  replace_int64_dataset(short_list, "/state/epoch_samples", {96, 96});
  expect_resealed_edit_refused(short_list, "/state/epoch_samples must hold 3 values");

  const std::string too_many_correct = scratch.file("correct.h5");
  model.write(too_many_correct, three_ranks());
  replace_int64_dataset(too_many_correct, "/state/interval_correct", {30, 0, 2});
  expect_resealed_edit_refused(too_many_correct, "/state/interval_correct of rank 2");

  const std::string missing = scratch.file("missing.h5");
  model.write(missing, three_ranks());
  {
    const hid_t file = H5Fopen(missing.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    EXPECT_GE(H5Ldelete(file, "/state/interval_samples", H5P_DEFAULT), 0);
    H5Fclose(file);
  }
  expect_resealed_edit_refused(missing, "/state/interval_samples: missing");

  // A loss sum changed inside the file's bytes: the checksum sees it.
  const std::string changed = scratch.file("changed.h5");
  model.write(changed, three_ranks());
  {
    const hid_t file = H5Fopen(changed.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hid_t dataset = H5Dopen2(file, "/state/epoch_loss_sum", H5P_DEFAULT);
    const std::vector<double> edited = {0.5, 1.0 / 3.0, 12345.678901234567};
    EXPECT_GE(H5Dwrite(dataset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, edited.data()), 0);
    H5Dclose(dataset);
    H5Fclose(file);
  }
  expect_resealed_edit_refused(changed, "/state/epoch_loss_sum: checksum mismatch");
}

}  // namespace
}  // namespace phalanx::train
