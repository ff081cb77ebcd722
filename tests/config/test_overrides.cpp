// Tests of `--set key=value` overrides: they change the parsed values, go through the same
// checks as the file, and their errors say that the value came from --set.
#include <gtest/gtest.h>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/x.yaml";
const std::string base = "model: {preset: lenet5}\ndata: {path: d.h5}\ntrain: {epochs: 2}\n";

TEST(ConfigOverrides, ValuesReplaceTheFile) {
  const Config config = parse(base, source,
                              {"optimizer.learning_rate=0.1", "train.max_steps=5", "train.epochs=7",
                               "seed=42", "name=smoke test", "checkpoint.keep = 9"});
  EXPECT_DOUBLE_EQ(config.optimizer.learning_rate, 0.1);
  ASSERT_TRUE(config.train.max_steps.has_value());
  EXPECT_EQ(*config.train.max_steps, 5);
  EXPECT_EQ(config.train.epochs, 7);
  EXPECT_EQ(config.seed, 42u);
  EXPECT_EQ(config.name, "smoke test");
  EXPECT_EQ(config.checkpoint.keep, 9);
}

TEST(ConfigOverrides, LaterOverrideWins) {
  const Config config = parse(base, source, {"train.batch_size=8", "train.batch_size=16"});
  EXPECT_EQ(config.train.batch_size, 16);
}

TEST(ConfigOverrides, NullRemovesTheStepLimit) {
  const std::string limited = "model: {preset: lenet5}\ndata: {path: d.h5}\ntrain: {max_steps: 3}\n";
  ASSERT_TRUE(parse(limited, source).train.max_steps.has_value());
  EXPECT_FALSE(parse(limited, source, {"train.max_steps=null"}).train.max_steps.has_value());
}

TEST(ConfigOverrides, ReplaceTheLayerListAsAWhole) {
  const Config config = parse(
      base, source, {"model.preset=", "model.layers=[{type: flatten}, {type: linear, out_features: 10}]"});
  EXPECT_TRUE(config.model.preset.empty());
  ASSERT_EQ(config.model.layers.size(), 2u);
  EXPECT_EQ(config.model.layers[1].out_features, 10);
}

TEST(ConfigOverrides, CreatesAbsentSections) {
  const Config config = parse(base, source, {"distributed.bucket_mb=4"});
  EXPECT_DOUBLE_EQ(config.distributed.bucket_mb, 4);
}

TEST(ConfigOverrides, UnknownKeyNamesKeyAndSuggestion) {
  expect_input_error([&] { parse(base, source, {"train.batchsize=5"}); },
                     {source + ": --set 'train.batchsize=5': unknown key 'train.batchsize' (did you mean "
                               "'train.batch_size'?)"});
  expect_input_error([&] { parse(base, source, {"optimizer.lr=0.1"}); },
                     {"--set 'optimizer.lr=0.1': unknown key 'optimizer.lr'"});
  expect_input_error(
      [&] { parse(base, source, {"train=3"}); },
      {"--set 'train=3': 'train' is a section; set its keys one at a time (e.g. train.epochs=...)"});
  expect_input_error([&] { parse(base, source, {"model.layers.0.kernel=3"}); },
                     {"--set 'model.layers.0.kernel=3': --set replaces 'model.layers' only as a whole"});
}

TEST(ConfigOverrides, MalformedOverride) {
  expect_input_error([&] { parse(base, source, {"train.epochs"}); },
                     {source + ": --set 'train.epochs': expected KEY=VALUE"});
  expect_input_error([&] { parse(base, source, {"=3"}); }, {"--set '=3': the key before '=' is empty"});
  expect_input_error([&] { parse(base, source, {"train.epochs=[1, 2"}); },
                     {"--set 'train.epochs=[1, 2': cannot read the value as YAML"});
  // yaml-cpp reads the first document of a text: the second was dropped without a word.
  expect_input_error([&] { parse(base, source, {"train.epochs=1\n---\n2"}); },
                     {"--set 'train.epochs=1\n---\n2': the value holds 2 YAML documents"});
}

TEST(ConfigOverrides, TypeAndRangeErrorsSayTheyCameFromSet) {
  expect_input_error([&] { parse(base, source, {"train.batch_size=abc"}); },
                     {source + ": train.batch_size: expected a positive integer, got 'abc' (from --set "
                               "train.batch_size)"});
  expect_input_error([&] { parse(base, source, {"optimizer.momentum=1.5"}); },
                     {"optimizer.momentum must be in [0, 1) (got 1.5) (from --set optimizer.momentum)"});
  expect_input_error(
      [&] { parse(base, source, {"train.epochs="}); },
      {"train.epochs: expected a positive integer, got an empty value (from --set train.epochs)"});
  expect_input_error(
      [&] { parse(base, source, {"optimizer.type=adam"}); },
      {"optimizer.type: unknown value 'adam' (did you mean 'adamw'?) (from --set optimizer.type)"});
  expect_input_error(
      [&] {
        parse(base, source, {"model.preset=", "model.layers=[{type: conv}]"});
      },
      {"model.layers[0].out_channels is required for a conv layer (from --set model.layers)"});
}

}  // namespace
}  // namespace phalanx::config
