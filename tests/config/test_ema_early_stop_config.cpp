// train.ema, train.early_stop and checkpoint.keep_best: off when absent, defaults and round trips
// through the resolved YAML; a decay outside (0, 1), every_steps or patience below 1, a negative
// min_delta, an unknown metric and an ema_ metric without train.ema are refused naming the key.
#include <gtest/gtest.h>

#include <string>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/config/evaluated_metric.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/recipe.yaml";
const std::string base = "model: {preset: lenet5}\ndata: {path: d.h5}\n";

TEST(EmaEarlyStopConfig, OffWhenAbsentAndNullAndRoundTrips) {
  const Config plain = parse(base, source);
  EXPECT_FALSE(plain.train.ema.has_value());
  EXPECT_FALSE(plain.train.early_stop.has_value());
  EXPECT_TRUE(plain.checkpoint.keep_best.empty());
  EXPECT_EQ(to_yaml(plain).find("ema"), std::string::npos) << "absent sections keep the YAML's shape";
  EXPECT_FALSE(parse(base + "train: {ema: null}\n", source).train.ema.has_value());

  const Config defaults = parse(base + "train: {ema: {}}\n", source);
  ASSERT_TRUE(defaults.train.ema.has_value());
  EXPECT_DOUBLE_EQ(defaults.train.ema->decay, 0.999);
  EXPECT_EQ(defaults.train.ema->every_steps, 1);
  EXPECT_TRUE(defaults.train.ema->warmup);

  const Config set = parse(base +
                               "train:\n  ema: {decay: 0.99, every_steps: 4, warmup: false}\n"
                               "  early_stop: {metric: ema_test_loss, patience: 3, min_delta: 0.001}\n"
                               "checkpoint: {keep_best: ema_test_top5_accuracy}\n",
                           source);
  EXPECT_DOUBLE_EQ(set.train.ema->decay, 0.99);
  EXPECT_EQ(set.train.ema->every_steps, 4);
  EXPECT_FALSE(set.train.ema->warmup);
  EXPECT_EQ(set.train.early_stop->metric, "ema_test_loss");
  EXPECT_EQ(set.train.early_stop->patience, 3);
  EXPECT_DOUBLE_EQ(set.train.early_stop->min_delta, 0.001);
  EXPECT_EQ(set.checkpoint.keep_best, "ema_test_top5_accuracy");
  EXPECT_EQ(parse(to_yaml(set), "round trip"), set) << to_yaml(set);

  EXPECT_DOUBLE_EQ(parse(base + "train: {ema: {}}\n", source, {"train.ema.decay=0.5"}).train.ema->decay, 0.5);
  EXPECT_EQ(parse(base, source, {"checkpoint.keep_best=test_loss"}).checkpoint.keep_best, "test_loss");
}

TEST(EmaEarlyStopConfig, DecayOutsideTheOpenUnitIntervalIsNamed) {
  for (const std::string decay : {"0", "1", "1.5", "-0.1", "high"})
    expect_input_error([&] { parse(base + "train: {ema: {decay: " + decay + "}}\n", source); },
                       {source + ": ", "train.ema.decay"});
  expect_input_error([&] { parse(base + "train: {ema: {every_steps: 0}}\n", source); },
                     {"train.ema.every_steps"});
  expect_input_error([&] { parse(base + "train: {ema: {warmup: sometimes}}\n", source); },
                     {"train.ema.warmup"});
  expect_input_error([&] { parse(base + "train: {ema: {decya: 0.9}}\n", source); },
                     {"unknown key 'train.ema.decya' (did you mean 'train.ema.decay'?)"});
  expect_input_error([&] { parse(base + "train: {ema: 0.999}\n", source); }, {"train.ema"});
}

TEST(EmaEarlyStopConfig, EarlyStopAndKeepBestMetricsAreChecked) {
  expect_input_error([&] { parse(base + "train: {early_stop: {metric: test_acuracy}}\n", source); },
                     {source + ": ", "train.early_stop.metric", "test_acuracy"});
  expect_input_error([&] { parse(base + "train: {early_stop: {metric: ema_test_accuracy}}\n", source); },
                     {"train.early_stop.metric", "train.ema is not set"});
  expect_input_error([&] { parse(base + "train: {early_stop: {patience: 0}}\n", source); },
                     {"train.early_stop.patience"});
  expect_input_error([&] { parse(base + "train: {early_stop: {min_delta: -0.01}}\n", source); },
                     {"train.early_stop.min_delta"});
  expect_input_error([&] { parse(base + "checkpoint: {keep_best: accuracy}\n", source); },
                     {"checkpoint.keep_best", "accuracy"});
  expect_input_error([&] { parse(base + "checkpoint: {keep_best: ema_test_loss}\n", source); },
                     {"checkpoint.keep_best", "train.ema is not set"});
  expect_input_error([&] { parse(base, source, {"checkpoint.keep_best=test_top0_accuracy"}); },
                     {"checkpoint.keep_best"});
}

TEST(EvaluatedMetric, NamesAndDirections) {
  EXPECT_TRUE(evaluated_metric("test_accuracy")->higher_is_better);
  EXPECT_FALSE(evaluated_metric("test_loss")->higher_is_better);
  EXPECT_FALSE(evaluated_metric("train_loss")->higher_is_better);
  EXPECT_FALSE(evaluated_metric("ema_train_loss").has_value()) << "the average has no training loss";
  const auto top = evaluated_metric("ema_test_top3_accuracy");
  ASSERT_TRUE(top.has_value());
  EXPECT_TRUE(top->of_average);
  EXPECT_EQ(top->top_k, 3);
  EXPECT_TRUE(top->higher_is_better);
  EXPECT_FALSE(evaluated_metric("ema_ema_test_loss").has_value());
  EXPECT_FALSE(evaluated_metric("test_top_accuracy").has_value());
}

}  // namespace
}  // namespace phalanx::config
