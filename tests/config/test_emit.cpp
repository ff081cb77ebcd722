// Tests of config::to_yaml and config::hash: the emitted YAML reads back to the same Config
// (layers nested inside residual blocks included), and the hash follows the values exactly.
#include <gtest/gtest.h>

#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

const char* const residual_yaml = R"(
name: residual_net
seed: 7
device: cpu
threads: 2
model:
  layers:
    - {type: conv, name: stem, out_channels: 16, padding: 1, bias: false}
    - {type: batch_norm, name: stem_bn}
    - {type: relu}
    - type: residual
      name: block1
      main:
        - {type: conv, out_channels: 32, stride: 2, padding: 1}
        - {type: batch_norm}
        - {type: conv, out_channels: 32, padding: 2, groups: 32, dilation: 2}
        - type: residual
          main: [{type: conv, out_channels: 32, padding: 1}]
          relu_after: false
      shortcut:
        - {type: conv, out_channels: 32, kernel: 1, stride: 2}
    - {type: max_pool, kernel: 2}
    - {type: global_avg_pool}
    - {type: flatten}
    - {type: dropout, probability: 0.3}
    - {type: linear, out_features: 10}
data: {path: "datasets/cifar 10.h5", test_split: "null"}
optimizer: {learning_rate: 0.1, weight_decay: 5e-4, epsilon: 1e-8, beta2: 0.999}
schedule: {type: cosine, warmup_epochs: 0.3333333333333333, minimum_factor: 0.01}
train: {epochs: 3, max_steps: 100, label_smoothing: 0.1}
checkpoint: {every_steps: 50}
distributed: {bucket_mb: 0.7}
)";

TEST(ConfigEmit, RoundTripWithResidualLayers) {
  const Config original = parse(residual_yaml, "residual.yaml");
  const std::string emitted = to_yaml(original);
  const Config reparsed = parse(emitted, "emitted.yaml");
  EXPECT_EQ(reparsed, original) << emitted;
  ASSERT_EQ(reparsed.model.layers.size(), 9u);
  ASSERT_EQ(reparsed.model.layers[3].main.size(), 4u);
  EXPECT_EQ(reparsed.model.layers[3].main[2].groups, 32);
  EXPECT_EQ(reparsed.model.layers[3].main[2].dilation, 2);
  EXPECT_EQ(reparsed.model.layers[3].main[3].main.size(), 1u);
  EXPECT_FALSE(reparsed.model.layers[3].main[3].relu_after);
  // A second trip is a fixed point: the text itself is stable.
  EXPECT_EQ(to_yaml(reparsed), emitted);
}

TEST(ConfigEmit, RoundTripOfDefaultsAndUnlimitedSteps) {
  Config config;
  config.model.preset = "fmnist_cnn";
  config.data.path = "d.h5";
  const Config reparsed = parse(to_yaml(config), "emitted.yaml");
  EXPECT_EQ(reparsed, config);
  EXPECT_FALSE(reparsed.train.max_steps.has_value());
}

TEST(ConfigEmit, DoublesRoundTripExactly) {
  Config config;
  config.model.preset = "lenet5";
  config.data.path = "d.h5";
  config.optimizer.learning_rate = 0.1 + 0.2;  // 0.30000000000000004: needs all 17 digits
  config.optimizer.epsilon = 5e-324;           // the smallest subnormal
  config.schedule.one_cycle_final_div_factor = 1.0 / 3.0;
  config.distributed.bucket_mb = 8191.0 / 3.0;
  const Config reparsed = parse(to_yaml(config), "emitted.yaml");
  EXPECT_EQ(reparsed.optimizer.learning_rate, config.optimizer.learning_rate);
  EXPECT_EQ(reparsed.optimizer.epsilon, config.optimizer.epsilon);
  EXPECT_EQ(reparsed.schedule.one_cycle_final_div_factor, config.schedule.one_cycle_final_div_factor);
  EXPECT_EQ(reparsed.distributed.bucket_mb, config.distributed.bucket_mb);
}

TEST(ConfigEmit, EveryKeyIsWritten) {
  Config config;
  config.model.preset = "lenet5";
  config.data.path = "d.h5";
  const std::string emitted = to_yaml(config);
  for (const char* key : {"name:", "seed:", "device:", "threads:", "preset:", "layers:", "prefetch_batches:",
                          "nesterov:", "beta1:", "one_cycle_final_div_factor:", "max_steps: ~",
                          "precision:", "every_steps:", "keep:", "bucket_mb:", "timeout_s:"}) {
    EXPECT_NE(emitted.find(key), std::string::npos) << key << " missing from:\n" << emitted;
  }
}

TEST(ConfigHash, StableForEqualConfigsAndChangesWithAnyValue) {
  const Config config = parse(residual_yaml, "residual.yaml");
  EXPECT_EQ(hash(config), hash(parse(residual_yaml, "other-name.yaml")));
  EXPECT_EQ(hash(config), hash(parse(to_yaml(config), "emitted.yaml")));

  Config changed = config;
  changed.optimizer.learning_rate = 0.1000000001;
  EXPECT_NE(hash(changed), hash(config));

  changed = config;
  changed.model.layers[3].main[3].relu_after = true;
  EXPECT_NE(hash(changed), hash(config));

  changed = config;
  changed.model.layers[3].main[2].groups = 16;
  EXPECT_NE(hash(changed), hash(config));

  changed = config;
  changed.model.layers[3].main[2].dilation = 1;
  EXPECT_NE(hash(changed), hash(config));

  changed = config;
  changed.train.max_steps.reset();
  EXPECT_NE(hash(changed), hash(config));

  changed = config;
  changed.seed = 8;
  EXPECT_NE(hash(changed), hash(config));
}

}  // namespace
}  // namespace phalanx::config
