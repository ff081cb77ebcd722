// Tests of config::parse on valid files: defaults, a realistic full config and explicit
// layer lists, including the defaults each layer type reads for absent keys.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

const char* const minimal_yaml = R"(
model: {preset: lenet5}
data: {path: datasets/fmnist.h5}
)";

TEST(ConfigParse, MinimalConfigTakesEveryDefault) {
  const Config parsed = parse(minimal_yaml, "minimal.yaml");
  Config expected;
  expected.model.preset = "lenet5";
  expected.data.path = "datasets/fmnist.h5";
  EXPECT_EQ(parsed, expected);
  EXPECT_FALSE(parsed.train.max_steps.has_value());
  EXPECT_TRUE(parsed.model.layers.empty());
}

TEST(ConfigParse, EmptySectionsReadAsDefaults) {
  const Config parsed =
      parse("model: {preset: resnet20}\ndata: {path: d.h5}\ntrain:\noptimizer:\n", "x.yaml");
  EXPECT_EQ(parsed.train, TrainConfig{});
  EXPECT_EQ(parsed.optimizer, OptimizerConfig{});
}

TEST(ConfigParse, RealisticConfigSetsEveryField) {
  const char* const yaml = R"(
# CIFAR-10 ResNet-20 on two ranks.
name: cifar_resnet20
seed: 18446744073709551615
device: cuda
threads: 4
model:
  preset: resnet20
data:
  path: datasets/cifar10.h5
  train_split: train
  test_split: val
  prefetch_batches: 8
optimizer:
  type: adamw
  learning_rate: 3e-4
  momentum: 0.0
  nesterov: true
  weight_decay: 0.05
  beta1: 0.85
  beta2: 0.995
  epsilon: 1.0e-6
schedule:
  type: one_cycle
  warmup_epochs: 2.5
  warmup_start_factor: 0.2
  step_epochs: 10
  gamma: 0.5
  minimum_factor: 0.01
  one_cycle_peak_fraction: 0.25
  one_cycle_div_factor: 10
  one_cycle_final_div_factor: 1000
train:
  epochs: 30
  max_steps: 12000
  batch_size: 128
  label_smoothing: 0.1
  log_every_steps: 20
  precision: bf16
checkpoint:
  every_steps: 500
  keep: 5
distributed:
  bucket_mb: 12.5
  timeout_s: 60
)";
  const Config config = parse(yaml, "configs/cifar10_resnet20.yaml");
  EXPECT_EQ(config.name, "cifar_resnet20");
  EXPECT_EQ(config.seed, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(phalanx::config::name_of(config.device), "cuda");
  EXPECT_EQ(config.threads, 4);
  EXPECT_EQ(config.model.preset, "resnet20");
  EXPECT_EQ(config.data.path, "datasets/cifar10.h5");
  EXPECT_EQ(config.data.train_split, "train");
  EXPECT_EQ(config.data.test_split, "val");
  EXPECT_EQ(config.data.prefetch_batches, 8);
  EXPECT_EQ(phalanx::config::name_of(config.optimizer.type), "adamw");
  EXPECT_DOUBLE_EQ(config.optimizer.learning_rate, 3e-4);
  EXPECT_DOUBLE_EQ(config.optimizer.momentum, 0.0);
  EXPECT_TRUE(config.optimizer.nesterov);
  EXPECT_DOUBLE_EQ(config.optimizer.weight_decay, 0.05);
  EXPECT_DOUBLE_EQ(config.optimizer.beta1, 0.85);
  EXPECT_DOUBLE_EQ(config.optimizer.beta2, 0.995);
  EXPECT_DOUBLE_EQ(config.optimizer.epsilon, 1e-6);
  EXPECT_EQ(phalanx::config::name_of(config.schedule.type), "one_cycle");
  EXPECT_DOUBLE_EQ(config.schedule.warmup_epochs, 2.5);
  EXPECT_DOUBLE_EQ(config.schedule.warmup_start_factor, 0.2);
  EXPECT_DOUBLE_EQ(config.schedule.step_epochs, 10);
  EXPECT_DOUBLE_EQ(config.schedule.gamma, 0.5);
  EXPECT_DOUBLE_EQ(config.schedule.minimum_factor, 0.01);
  EXPECT_DOUBLE_EQ(config.schedule.one_cycle_peak_fraction, 0.25);
  EXPECT_DOUBLE_EQ(config.schedule.one_cycle_div_factor, 10);
  EXPECT_DOUBLE_EQ(config.schedule.one_cycle_final_div_factor, 1000);
  EXPECT_EQ(config.train.epochs, 30);
  ASSERT_TRUE(config.train.max_steps.has_value());
  EXPECT_EQ(*config.train.max_steps, 12000);
  EXPECT_EQ(config.train.batch_size, 128);
  EXPECT_DOUBLE_EQ(config.train.label_smoothing, 0.1);
  EXPECT_EQ(config.train.log_every_steps, 20);
  EXPECT_EQ(phalanx::config::name_of(config.train.precision), "bf16");
  EXPECT_EQ(config.checkpoint.every_steps, 500);
  EXPECT_EQ(config.checkpoint.keep, 5);
  EXPECT_DOUBLE_EQ(config.distributed.bucket_mb, 12.5);
  EXPECT_DOUBLE_EQ(config.distributed.timeout_s, 60);
}

TEST(ConfigParse, ExplicitLayerListWithResidualBlock) {
  const char* const yaml = R"(
data: {path: d.h5}
model:
  layers:
    - {type: conv, name: stem, out_channels: 16, kernel: 3, padding: 1, bias: false}
    - {type: batch_norm}
    - {type: relu}
    - type: residual
      main:
        - {type: conv, out_channels: 32, stride: 2, padding: 1}
        - {type: batch_norm}
      shortcut:
        - {type: conv, out_channels: 32, kernel: 1, stride: 2}
      relu_after: false
    - {type: max_pool, kernel: 2}
    - {type: avg_pool, kernel: 3, stride: 1, padding: 1}
    - {type: global_avg_pool}
    - {type: flatten}
    - {type: dropout, probability: 0.25}
    - {type: linear, out_features: 10}
)";
  const Config config = parse(yaml, "custom.yaml");
  const std::vector<LayerSpec>& layers = config.model.layers;
  ASSERT_EQ(layers.size(), 10u);
  EXPECT_TRUE(config.model.preset.empty());

  EXPECT_EQ(layers[0].type, "conv");
  EXPECT_EQ(layers[0].name, "stem");
  EXPECT_EQ(layers[0].out_channels, 16);
  EXPECT_EQ(layers[0].kernel, 3);
  EXPECT_EQ(layers[0].stride, 1);  // conv keeps the LayerSpec default
  EXPECT_EQ(layers[0].padding, 1);
  EXPECT_EQ(layers[0].groups, 1);  // torch.nn.Conv2d's defaults
  EXPECT_EQ(layers[0].dilation, 1);
  EXPECT_FALSE(layers[0].bias);

  const LayerSpec& block = layers[3];
  EXPECT_EQ(block.type, "residual");
  EXPECT_FALSE(block.relu_after);
  ASSERT_EQ(block.main.size(), 2u);
  EXPECT_EQ(block.main[0].out_channels, 32);
  EXPECT_EQ(block.main[0].stride, 2);
  EXPECT_EQ(block.main[1].type, "batch_norm");
  ASSERT_EQ(block.shortcut.size(), 1u);
  EXPECT_EQ(block.shortcut[0].kernel, 1);
  EXPECT_TRUE(block.shortcut[0].bias);

  // A pool without a stride gets 0, which LayerSpec defines as "equal to the kernel".
  EXPECT_EQ(layers[4].type, "max_pool");
  EXPECT_EQ(layers[4].kernel, 2);
  EXPECT_EQ(layers[4].stride, 0);
  EXPECT_EQ(layers[5].stride, 1);
  EXPECT_EQ(layers[5].padding, 1);
  EXPECT_FLOAT_EQ(layers[8].probability, 0.25f);
  EXPECT_EQ(layers[9].out_features, 10);
}

TEST(ConfigParse, ResidualWithoutShortcutKeepsIdentity) {
  const Config config = parse(R"(
data: {path: d.h5}
model:
  layers:
    - type: residual
      main: [{type: conv, out_channels: 8, padding: 1}]
)",
                              "x.yaml");
  ASSERT_EQ(config.model.layers.size(), 1u);
  EXPECT_TRUE(config.model.layers[0].shortcut.empty());
  EXPECT_TRUE(config.model.layers[0].relu_after);
}

TEST(ConfigParse, BooleansAcceptYamlSpellings) {
  const Config config =
      parse("model: {preset: lenet5}\ndata: {path: d.h5}\noptimizer: {nesterov: yes}\n", "x.yaml");
  EXPECT_TRUE(config.optimizer.nesterov);
  const Config off =
      parse("model: {preset: lenet5}\ndata: {path: d.h5}\noptimizer: {nesterov: False}\n", "x.yaml");
  EXPECT_FALSE(off.optimizer.nesterov);
}

TEST(ConfigParse, NullMaxStepsMeansUnlimited) {
  const Config config =
      parse("model: {preset: lenet5}\ndata: {path: d.h5}\ntrain: {max_steps: ~}\n", "x.yaml");
  EXPECT_FALSE(config.train.max_steps.has_value());
}

}  // namespace
}  // namespace phalanx::config
