// Tests of the block layer keys: squeeze_excitation (squeeze_channels, activation,
// scale_activation), inverted_residual (out_channels, expand_ratio, kernel, stride, activation,
// squeeze_excitation, stochastic_depth) and stochastic_depth on residual blocks: their defaults,
// the emit round trip (a residual block without stochastic depth is written as before), and bad
// values named by their key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/layer_list_config.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::config_source;
using phalanx::testing::expect_layer_error;
using phalanx::testing::parse_layers;

TEST(ConfigBlocks, KeysAndDefaults) {
  const Config config = parse_layers(
      "    - {type: conv, out_channels: 16}\n"
      "    - {type: squeeze_excitation, squeeze_channels: 4}\n"
      "    - {type: squeeze_excitation, squeeze_channels: 8, activation: silu, scale_activation: "
      "hardsigmoid}\n"
      "    - {type: inverted_residual, out_channels: 16}\n"
      "    - {type: inverted_residual, out_channels: 24, expand_ratio: 4.5, kernel: 5, stride: 2,\n"
      "       activation: hardswish, squeeze_excitation: 0.25, stochastic_depth: 0.1}\n"
      "    - type: residual\n      stochastic_depth: 0.2\n      main: [{type: conv, out_channels: 24, "
      "padding: 1}]\n");
  const std::vector<LayerSpec>& layers = config.model.layers;
  ASSERT_EQ(layers.size(), 6u);
  EXPECT_EQ(layers[1].squeeze_channels, 4);
  EXPECT_EQ(layers[1].activation, "relu");  // torchvision.ops.SqueezeExcitation's defaults
  EXPECT_EQ(layers[1].scale_activation, "sigmoid");
  EXPECT_EQ(layers[2].activation, "silu");
  EXPECT_EQ(layers[2].scale_activation, "hardsigmoid");
  EXPECT_EQ(layers[3].activation, "relu6");  // MobileNetV2's
  EXPECT_FLOAT_EQ(layers[3].expand_ratio, 1.0f);
  EXPECT_EQ(layers[3].kernel, 3);
  EXPECT_EQ(layers[3].stride, 1);
  EXPECT_FLOAT_EQ(layers[3].squeeze_excitation, 0.0f);
  EXPECT_FLOAT_EQ(layers[3].stochastic_depth, 0.0f);
  EXPECT_FLOAT_EQ(layers[4].expand_ratio, 4.5f);
  EXPECT_EQ(layers[4].kernel, 5);
  EXPECT_EQ(layers[4].stride, 2);
  EXPECT_EQ(layers[4].activation, "hardswish");
  EXPECT_FLOAT_EQ(layers[4].squeeze_excitation, 0.25f);
  EXPECT_FLOAT_EQ(layers[4].stochastic_depth, 0.1f);
  EXPECT_FLOAT_EQ(layers[5].stochastic_depth, 0.2f);
}

TEST(ConfigBlocks, EmitRoundTrip) {
  const Config original = parse_layers(
      "    - {type: conv, out_channels: 16}\n"
      "    - {type: squeeze_excitation, squeeze_channels: 8, activation: silu}\n"
      "    - {type: inverted_residual, out_channels: 24, expand_ratio: 6, kernel: 5, stride: 2,\n"
      "       activation: silu, squeeze_excitation: 0.25, stochastic_depth: 0.05}\n"
      "    - type: residual\n      stochastic_depth: 0.125\n      main: [{type: conv, out_channels: 24, "
      "padding: 1}]\n"
      "    - type: residual\n      main: [{type: conv, out_channels: 24, padding: 1}]\n");
  const std::string emitted = to_yaml(original);
  const Config reparsed = parse(emitted, "emitted.yaml");
  EXPECT_EQ(reparsed, original) << emitted;
  // Only the residual block that has stochastic depth, and the inverted residual, write the key.
  int written = 0;
  for (std::size_t at = emitted.find("stochastic_depth"); at != std::string::npos;
       at = emitted.find("stochastic_depth", at + 1))
    ++written;
  EXPECT_EQ(written, 2) << emitted;
}

TEST(ConfigBlocks, BadValuesNameTheirKey) {
  expect_layer_error("    - {type: squeeze_excitation}\n",
                     {"model.layers[0].squeeze_channels is required for a squeeze_excitation layer"});
  expect_layer_error("    - {type: squeeze_excitation, squeeze_channels: 0}\n",
                     {"model.layers[0].squeeze_channels"});
  expect_layer_error("    - {type: squeeze_excitation, squeeze_channels: 4, activation: swish}\n",
                     {"model.layers[0].activation: unknown value 'swish' (allowed: relu, relu6, sigmoid"});
  expect_layer_error("    - {type: squeeze_excitation, squeeze_channels: 4, scale_activation: conv}\n",
                     {"model.layers[0].scale_activation: unknown value 'conv'"});
  expect_layer_error("    - {type: inverted_residual}\n",
                     {"model.layers[0].out_channels is required for a inverted_residual layer"});
  expect_layer_error("    - {type: inverted_residual, out_channels: 8, expand_ratio: 0.5}\n",
                     {"model.layers[0].expand_ratio"});
  expect_layer_error("    - {type: inverted_residual, out_channels: 8, squeeze_excitation: 1.5}\n",
                     {"model.layers[0].squeeze_excitation"});
  expect_layer_error("    - {type: inverted_residual, out_channels: 8, stochastic_depth: 1}\n",
                     {"model.layers[0].stochastic_depth"});
  expect_layer_error("    - type: residual\n      stochastic_depth: -0.1\n      main: [{type: relu}]\n",
                     {"model.layers[0].stochastic_depth"});
  expect_layer_error("    - type: residual\n      stochastic_depth: often\n      main: [{type: relu}]\n",
                     {"model.layers[0].stochastic_depth"});
  // Keys of the blocks are refused elsewhere.
  expect_layer_error("    - {type: conv, out_channels: 8, stochastic_depth: 0.1}\n",
                     {"'model.layers[0].stochastic_depth' does not apply to a conv layer"});
  expect_layer_error("    - {type: relu, squeeze_channels: 4}\n",
                     {"'model.layers[0].squeeze_channels' does not apply to a relu layer"});
  expect_layer_error("    - {type: inverted_residual, out_channels: 8, padding: 1}\n",
                     {"'model.layers[0].padding' does not apply to a inverted_residual layer"});
}

TEST(ConfigBlocks, PresetsOfTorchvisionAreKnown) {
  for (const char* preset : {"mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "resnext50_32x4d"}) {
    const Config config =
        parse(std::string("data: {path: d.h5}\nmodel: {preset: ") + preset + "}\n", config_source);
    EXPECT_EQ(config.model.preset, preset);
  }
}

}  // namespace
}  // namespace phalanx::config
