// Tests of model.init_from and train.freeze: defaults, parsing (torch's '.' spelling of a prefix
// read as phalanx's '/'), the errors that name the key, and the round trip through the resolved YAML.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/finetune.yaml";
const std::string base = "model: {preset: resnet18}\ndata: {path: d.h5}\n";

TEST(WeightsConfig, DefaultsAreNoFileAndNothingFrozen) {
  const Config config = parse(base, source);
  EXPECT_EQ(config.model.init_from, "");
  EXPECT_TRUE(config.train.freeze.empty());
  EXPECT_EQ(parse(to_yaml(config), "round trip"), config);
}

TEST(WeightsConfig, InitFromAndFreezeRoundTrip) {
  const Config config = parse(
      "model: {preset: resnet18, init_from: weights/resnet18.safetensors}\ndata: {path: d.h5}\n"
      "train: {freeze: [conv1, bn1, layer1.0, 'layer2/', layer1/0]}\n",
      source);
  EXPECT_EQ(config.model.init_from, "weights/resnet18.safetensors");
  // torch's dots read as slashes, a trailing slash dropped, a repeat kept once.
  EXPECT_EQ(config.train.freeze, (std::vector<std::string>{"conv1", "bn1", "layer1/0", "layer2"}));
  const std::string yaml = to_yaml(config);
  EXPECT_NE(yaml.find("init_from: \"weights/resnet18.safetensors\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("freeze: [\"conv1\", \"bn1\", \"layer1/0\", \"layer2\"]"), std::string::npos) << yaml;
  EXPECT_EQ(parse(yaml, "round trip"), config);
  EXPECT_NE(hash(config), hash(parse(base, source)));
  const Config overridden = parse(base, source, {"train.freeze=[layer4.1]", "model.init_from=w.safetensors"});
  EXPECT_EQ(overridden.train.freeze, std::vector<std::string>{"layer4/1"});
  EXPECT_EQ(overridden.model.init_from, "w.safetensors");
}

TEST(WeightsConfig, BadValuesNameTheKey) {
  expect_input_error([&] { parse(base + "train: {freeze: conv1}\n", source); },
                     {source + ": ", "train.freeze must be a list of parameter name prefixes"});
  expect_input_error([&] { parse(base + "train: {freeze: ['']}\n", source); },
                     {"train.freeze[0]: '' is not a parameter name prefix"});
  expect_input_error([&] { parse(base + "train: {freeze: [conv1, '/layer1']}\n", source); },
                     {"train.freeze[1]: '/layer1' is not a parameter name prefix"});
  expect_input_error([&] { parse(base + "train: {freeze: [[conv1]]}\n", source); }, {"train.freeze[0]"});
  expect_input_error(
      [&] { parse("model: {preset: resnet18, init_from: [a]}\ndata: {path: d.h5}\n", source); },
      {"model.init_from"});
  expect_input_error([&] { parse("model: {preset: resnet18, init_form: a}\ndata: {path: d.h5}\n", source); },
                     {"unknown key 'model.init_form' (did you mean 'model.init_from'?)"});
}

}  // namespace
}  // namespace phalanx::config
