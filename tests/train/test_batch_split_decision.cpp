// The job's batch split decision (decide_batch_split, plan_batch_split): one pure function over the
// config, the checkpoint's header and what the ranks gathered, for `phalanx train` and a sweep's
// trials alike. Each case of the rule: fresh runs (equal, explicit, throughput), resumes on the same
// ranks (kept, or nothing to say when it was equal), resumes on other ranks (the global batch
// re-cut), and elastic.global_batch: change (split as a fresh run).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "setup/batch_split.hpp"

namespace phalanx::train {
namespace {

const std::string base = "model: {preset: lenet5}\ndata: {path: d.h5}\ntrain: {batch_size: 16}\n";

config::Config parsed(const std::vector<std::string>& overrides = {}) {
  return config::parse(base, "job.yaml", overrides);
}

CheckpointHeader header(int world_size, std::vector<int> local_batches) {
  CheckpointHeader written;
  written.path = "runs/a/checkpoints/step-8.h5";
  written.world_size = world_size;
  written.config_text = base;
  for (const int batch : local_batches) written.global_batch += batch;
  written.local_batches = std::move(local_batches);
  return written;
}

SplitMeasurements gathered(std::vector<bool> gpu, std::vector<double> rates = {}, double probe_seconds = 0) {
  if (rates.empty()) rates.assign(gpu.size(), 0.0);
  return SplitMeasurements{std::move(gpu), std::move(rates), probe_seconds};
}

BatchSplit decide(const config::Config& config, const CheckpointHeader* resume, const SplitMeasurements& measured) {
  return decide_batch_split(config, resume, plan_batch_split(config, resume, static_cast<int>(measured.gpu.size())),
                            measured);
}

TEST(BatchSplitDecision, AFreshEqualRunNeedsNoSplit) {
  const BatchSplit split = decide(parsed(), nullptr, gathered({false, false}));
  EXPECT_TRUE(split.local_batches.empty());
  EXPECT_FALSE(plan_batch_split(parsed(), nullptr, 2).measure);
}

TEST(BatchSplitDecision, AFreshRunTakesTheListedLocalBatches) {
  const BatchSplit split =
      decide(parsed({"distributed.local_batches=[24, 8]"}), nullptr, gathered({true, false}));
  EXPECT_EQ(split.method, "explicit");
  EXPECT_EQ(split.local_batches, (std::vector<int>{24, 8}));
  EXPECT_EQ(split.devices, (std::vector<std::string>{"cuda", "cpu"}));
  EXPECT_TRUE(split.images_per_second.empty());
}

TEST(BatchSplitDecision, AFreshThroughputRunSplitsTheGlobalBatchByTheMeasuredRates) {
  const auto config = parsed({"distributed.batch_split=throughput"});
  EXPECT_TRUE(plan_batch_split(config, nullptr, 2).measure);
  const BatchSplit split = decide(config, nullptr, gathered({true, false}, {3000, 1000}, 1.5));
  EXPECT_EQ(split.method, "throughput");
  EXPECT_EQ(split.local_batches, (std::vector<int>{24, 8}));  // 16 x 2 ranks, 3:1
  EXPECT_EQ(split.images_per_second, (std::vector<double>{3000, 1000}));
  EXPECT_EQ(split.probe_seconds, 1.5);
}

TEST(BatchSplitDecision, ListedLocalBatchesMustFitTheRanks) {
  EXPECT_THROW(plan_batch_split(parsed({"distributed.local_batches=[24, 8]"}), nullptr, 3), Error);
}

TEST(BatchSplitDecision, AResumeOnTheSameRanksKeepsItsSplit) {
  const CheckpointHeader uneven = header(2, {24, 8});
  const BatchSplit split = decide(parsed({"distributed.batch_split=throughput"}), &uneven, gathered({true, false}));
  EXPECT_FALSE(plan_batch_split(parsed({"distributed.batch_split=throughput"}), &uneven, 2).measure)
      << "a stored split is reused, not measured again";
  EXPECT_EQ(split.method, "throughput");
  EXPECT_EQ(split.local_batches, (std::vector<int>{24, 8}));
  EXPECT_EQ(split.stored_in, uneven.path);
  EXPECT_TRUE(split.checkpoint_local_batches.empty());
  // The uneven split needs the setting that made it.
  EXPECT_THROW(decide(parsed(), &uneven, gathered({true, false})), Error);
  // An equal run at train.batch_size resumes with nothing to say.
  const CheckpointHeader equal = header(2, {16, 16});
  EXPECT_TRUE(decide(parsed(), &equal, gathered({false, false})).local_batches.empty());
}

TEST(BatchSplitDecision, AResumeOnOtherRanksRecutsTheGlobalBatch) {
  const CheckpointHeader two = header(2, {16, 16});
  const auto config = parsed();
  EXPECT_TRUE(plan_batch_split(config, &two, 3).elastic);
  const BatchSplit split = decide(config, &two, gathered({false, false, false}));
  EXPECT_EQ(split.method, "equal");
  EXPECT_EQ(split.local_batches, (std::vector<int>{11, 11, 10}));  // 32 over 3, lower ranks first
  EXPECT_EQ(split.checkpoint_local_batches, (std::vector<int>{16, 16}));
  EXPECT_EQ(split.stored_in, two.path);
  // On measured rates when the config asks for throughput.
  const CheckpointHeader four = header(4, {8, 8, 8, 8});
  const auto measured = parsed({"distributed.batch_split=throughput"});
  EXPECT_TRUE(plan_batch_split(measured, &four, 2).measure);
  const BatchSplit by_rate = decide(measured, &four, gathered({true, false}, {3000, 1000}));
  EXPECT_EQ(by_rate.method, "throughput");
  EXPECT_EQ(by_rate.local_batches, (std::vector<int>{24, 8}));
  EXPECT_EQ(by_rate.checkpoint_local_batches, (std::vector<int>{8, 8, 8, 8}));
}

TEST(BatchSplitDecision, ChangingTheGlobalBatchSplitsAsAFreshRun) {
  const CheckpointHeader two = header(2, {16, 16});
  const auto config = parsed({"elastic.global_batch=change", "train.batch_size=8"});
  const SplitPlan plan = plan_batch_split(config, &two, 4);
  EXPECT_TRUE(plan.fresh);
  EXPECT_FALSE(plan.elastic);
  EXPECT_TRUE(decide(config, &two, gathered({false, false, false, false})).local_batches.empty());
}

}  // namespace
}  // namespace phalanx::train
