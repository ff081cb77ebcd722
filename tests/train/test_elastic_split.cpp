// Elastic checkpoints: a checkpoint stores its global batch, elastic_split cuts it over another
// number of ranks (evenly, by rates, or as given, which must add up), older checkpoints still give
// their global batch, and a checkpoint's per-rank loss totals merge into one rank's.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/nn/parameter_registry.hpp"
#include "setup/batch_split.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "support/test_support.hpp"
#include "train/checkpoint_test_model.hpp"

namespace phalanx::train {
namespace {

using phalanx::testing::ScratchDirectory;

const std::string config_text = "model: {preset: lenet5}\ndata: {path: d.h5}\ntrain: {batch_size: 12}\n";

struct SmallModel : phalanx::testing::CheckpointTestModel {
  void write(const std::string& path, const std::vector<int>& local_batches, int world_size) {
    write_checkpoint(path, *backend, registry, nullptr, TrainingPosition{6, 0, 6, 6 * 48}, world_size, 5,
                     config_text, nullptr, local_batches);
  }
};

config::Config parsed(const std::vector<std::string>& overrides = {}) {
  return config::parse(config_text, "job.yaml", overrides);
}

void expect_refused(const std::function<void()>& action, const std::vector<std::string>& parts) {
  try {
    action();
    ADD_FAILURE() << "not refused";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidInput) << error.what();
    for (const auto& part : parts)
      EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << part << " in: " << error.what();
  }
}

TEST(ElasticSplit, TheCheckpointStoresItsGlobalBatch) {
  ScratchDirectory scratch("elastic_split_global_batch");
  SmallModel model;
  const std::string path = scratch.file("step-6.h5");
  model.write(path, {13, 13, 12, 12}, 4);
  const CheckpointHeader header = read_checkpoint_header(path);
  EXPECT_EQ(header.global_batch, 50);
  EXPECT_EQ(stored_global_batch(header), 50);
  EXPECT_EQ(header.learning_rate, 0.0) << "no rescaled rate unless a resume changed the global batch";
}

TEST(ElasticSplit, ACheckpointWithoutASplitTakesItsConfigsBatch) {
  // As written before the split and the global batch were stored.
  ScratchDirectory scratch("elastic_split_older");
  SmallModel model;
  const std::string path = scratch.file("step-6.h5");
  model.write(path, {}, 4);
  const CheckpointHeader header = read_checkpoint_header(path);
  EXPECT_EQ(header.global_batch, 0);
  EXPECT_EQ(stored_global_batch(header), 48);  // train.batch_size 12 x 4 ranks
  EXPECT_EQ(elastic_split(header, parsed(), 2, {}), (std::vector<int>{24, 24}));
}

TEST(ElasticSplit, CutsTheGlobalBatchOverTheNewRanks) {
  ScratchDirectory scratch("elastic_split_cut");
  SmallModel model;
  const std::string path = scratch.file("step-6.h5");
  model.write(path, {12, 12, 12, 12}, 4);
  const CheckpointHeader header = read_checkpoint_header(path);
  EXPECT_TRUE(is_elastic_resume(header, 3));
  EXPECT_FALSE(is_elastic_resume(header, 4));
  EXPECT_EQ(elastic_split(header, parsed(), 1, {}), (std::vector<int>{48}));
  EXPECT_EQ(elastic_split(header, parsed(), 3, {}), (std::vector<int>{16, 16, 16}));
  EXPECT_EQ(elastic_split(header, parsed(), 5, {}), (std::vector<int>{10, 10, 10, 9, 9}));
  // batch_split: throughput cuts it by the rates measured on the new ranks.
  EXPECT_EQ(elastic_split(header, parsed({"distributed.batch_split=throughput"}), 2, {3000.0, 1000.0}),
            (std::vector<int>{36, 12}));
  // Rates are ignored unless the config asks for a throughput split.
  EXPECT_EQ(elastic_split(header, parsed(), 2, {3000.0, 1000.0}), (std::vector<int>{24, 24}));
  // An explicit split is taken when it keeps the global batch.
  EXPECT_EQ(elastic_split(header, parsed({"distributed.local_batches=[40, 8]"}), 2, {}),
            (std::vector<int>{40, 8}));
}

TEST(ElasticSplit, RefusesWhatWouldChangeTheGlobalBatch) {
  ScratchDirectory scratch("elastic_split_refused");
  SmallModel model;
  const std::string path = scratch.file("step-6.h5");
  model.write(path, {12, 12, 12, 12}, 4);
  const CheckpointHeader header = read_checkpoint_header(path);
  expect_refused([&] { elastic_split(header, parsed({"distributed.local_batches=[40, 4]"}), 2, {}); },
                 {path, "written by 4 ranks", "global batch 48", "resumed on 2 ranks",
                  "distributed.local_batches", "adds up to 44", "elastic.global_batch: change"});
  expect_refused(
      [&] { elastic_split(header, parsed(), 49, {}); },
      {path, "written by 4 ranks", "resumed on 49 ranks", "at most 48 ranks", "elastic.global_batch"});
}

TEST(ElasticSplit, RunningTotalsMergeIntoOneRanks) {
  const std::vector<RunningTotals> every_rank = {
      {1.5, 24, 0.25, 3, 8}, {2.0, 24, 0.5, 5, 8}, {0.5, 24, 0.0, 0, 8}};
  const RunningTotals merged = merge_running_totals(every_rank);
  EXPECT_EQ(merged, (RunningTotals{4.0, 72, 0.75, 8, 24}));
  EXPECT_EQ(merge_running_totals({}), RunningTotals{});
}

}  // namespace
}  // namespace phalanx::train
