// The weight average (/ema, /state/ema_updates) and the early-stop and best-checkpoint states
// (/state/early_stop, /state/keep_best) come back from a checkpoint exactly; a checkpoint without
// them reads as none, and asking it for an average or exporting one is refused naming the file.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/metric_watch.hpp"
#include "phalanx/train/weights_import.hpp"
#include "support/test_support.hpp"

namespace phalanx::train {
namespace {

using phalanx::testing::ScratchDirectory;

struct ModelWithBuffer {
  std::unique_ptr<backend::Backend> backend = backend::make_cpu_backend(1);
  nn::ParameterRegistry registry;
  ModelWithBuffer() {
    registry.declare_parameter("fc/weight", Shape{2, 3}, nn::Initializer::KaimingUniformWeight, 3);
    registry.declare_buffer("bn/running_var", Shape{3}, nn::Initializer::Ones);
    registry.allocate(*backend, 5);
  }
  void write(const std::string& path, const CheckpointExtras& extras) {
    write_checkpoint(path, *backend, registry, nullptr, TrainingPosition{12, 1, 2, 120}, 1, 5, "name: test\n",
                     nullptr, {}, {}, 0, 0, extras);
  }
};

TEST(CheckpointExtras, AverageAndWatchesComeBackExactly) {
  ScratchDirectory scratch("checkpoint_extras_round_trip");
  ModelWithBuffer model;
  CheckpointExtras extras;
  WeightAverageState average;
  // The flat buffers' alignment padding is not stored: it stays 0 here.
  average.parameters.assign(static_cast<std::size_t>(model.registry.parameter_count()), 0.0f);
  for (std::size_t index = 0; index < 6; ++index)
    average.parameters[index] = std::nextafter(0.1f * static_cast<float>(index), 1.0f);
  average.buffers.assign(static_cast<std::size_t>(model.registry.buffer_count()), 0.0f);
  average.buffers[0] = 0.5f;
  average.buffers[1] = 1e-30f;
  average.buffers[2] = -2.25f;
  average.updates = 6;
  extras.average = average;
  extras.early_stop = MetricWatchState{"ema_test_loss", true, 0.1 + 0.2, 3, 2};
  extras.keep_best = MetricWatchState{"test_top5_accuracy", true, 0.96875, 1, 0};
  const std::string path = scratch.file("step-12.h5");
  model.write(path, extras);

  const OpenCheckpoint checkpoint(path);
  EXPECT_TRUE(checkpoint.header().has_average);
  ASSERT_TRUE(checkpoint.header().early_stop.has_value());
  EXPECT_EQ(*checkpoint.header().early_stop, *extras.early_stop);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(checkpoint.header().early_stop->best),
            std::bit_cast<std::uint64_t>(0.1 + 0.2));
  EXPECT_EQ(*checkpoint.header().keep_best, *extras.keep_best);
  const WeightAverageState read = checkpoint.average(model.registry);
  EXPECT_EQ(read.parameters, average.parameters);
  EXPECT_EQ(read.buffers, average.buffers);
  EXPECT_EQ(read.updates, 6);
  // /ema has /model's names and shapes: what the export takes with --ema.
  const auto trained = checkpoint.model_tensors();
  const auto averaged = checkpoint.model_tensors("/ema");
  ASSERT_EQ(averaged.size(), trained.size());
  for (std::size_t index = 0; index < trained.size(); ++index) {
    EXPECT_EQ(averaged[index].name, trained[index].name);
    EXPECT_EQ(averaged[index].shape, trained[index].shape);
  }
  EXPECT_EQ(export_weights(path, scratch.file("average.safetensors"), ExportedWeights::Average),
            trained.size());
}

TEST(CheckpointExtras, ACheckpointWithoutThemHasNone) {
  ScratchDirectory scratch("checkpoint_extras_absent");
  ModelWithBuffer model;
  const std::string path = scratch.file("step-12.h5");
  // A watch that has not evaluated yet writes nothing.
  CheckpointExtras extras;
  MetricWatchState unevaluated;
  unevaluated.metric = "test_accuracy";
  extras.early_stop = unevaluated;
  model.write(path, extras);
  const OpenCheckpoint checkpoint(path);
  EXPECT_FALSE(checkpoint.header().has_average);
  EXPECT_FALSE(checkpoint.header().early_stop.has_value());
  EXPECT_FALSE(checkpoint.header().keep_best.has_value());
  try {
    checkpoint.average(model.registry);
    ADD_FAILURE() << "no average to read";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
  const std::string output = scratch.file("none.safetensors");
  try {
    export_weights(path, output, ExportedWeights::Average);
    ADD_FAILURE() << "no average to export";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("/ema"), std::string::npos) << error.what();
  }
  EXPECT_FALSE(std::filesystem::exists(output));
}

TEST(CheckpointExtras, AWatchWhoseEvaluationsWereAllNaNKeepsItsCount) {
  // Evaluations that gave NaN count against the patience before any best exists (MetricWatch::
  // observe): a resume must not start the count again.
  ScratchDirectory scratch("checkpoint_extras_nan_watch");
  ModelWithBuffer model;
  MetricWatch watch("test_loss", 0.0);
  watch.observe(std::nan(""), 1);
  watch.observe(std::nan(""), 2);
  CheckpointExtras extras;
  extras.early_stop = watch.state();
  const std::string path = scratch.file("step-12.h5");
  model.write(path, extras);
  const OpenCheckpoint checkpoint(path);
  ASSERT_TRUE(checkpoint.header().early_stop.has_value());
  EXPECT_EQ(*checkpoint.header().early_stop, watch.state());
  MetricWatch resumed("test_loss", 0.0);
  resumed.restore(*checkpoint.header().early_stop);
  EXPECT_FALSE(resumed.observe(std::nan(""), 3));
  EXPECT_EQ(resumed.state().evaluations_since_best, 3);
  EXPECT_TRUE(resumed.observe(0.5, 4));
  EXPECT_EQ(resumed.state().best_epoch, 4);
}

}  // namespace
}  // namespace phalanx::train
