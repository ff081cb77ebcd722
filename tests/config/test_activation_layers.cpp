// Tests of the activation layer types (silu, relu6, hardswish, hardsigmoid, sigmoid, gelu): they
// parse with only their own keys, gelu's `approximate` takes none or tanh, they survive the emit
// round trip, and misspelt or foreign names (swish) are input errors with a suggestion.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/layer_list_config.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_layer_error;
using phalanx::testing::parse_layers;

TEST(ConfigActivationLayers, EveryTypeParsesWithItsDefaults) {
  const Config config = parse_layers(
      "    - {type: conv, out_channels: 8}\n"
      "    - {type: silu}\n    - {type: relu6, name: clipped}\n    - {type: hardswish}\n"
      "    - {type: hardsigmoid}\n    - {type: sigmoid}\n    - {type: gelu}\n"
      "    - {type: gelu, approximate: tanh}\n    - {type: gelu, approximate: none}\n");
  const std::vector<LayerSpec>& layers = config.model.layers;
  ASSERT_EQ(layers.size(), 9u);
  const std::vector<std::string> types = {"conv",    "silu", "relu6", "hardswish", "hardsigmoid",
                                          "sigmoid", "gelu", "gelu",  "gelu"};
  for (std::size_t index = 0; index < layers.size(); ++index) EXPECT_EQ(layers[index].type, types[index]);
  EXPECT_EQ(layers[2].name, "clipped");
  EXPECT_EQ(layers[6].approximate, "none");  // torch.nn.GELU's default: the exact erf form
  EXPECT_EQ(layers[7].approximate, "tanh");
  EXPECT_EQ(layers[8].approximate, "none");
}

TEST(ConfigActivationLayers, EmitRoundTripKeepsTypesAndGeluForm) {
  const Config original = parse_layers(
      "    - {type: conv, out_channels: 8}\n    - {type: hardswish}\n"
      "    - type: residual\n      main: [{type: conv, out_channels: 8}, {type: silu}]\n"
      "    - {type: gelu, approximate: tanh}\n    - {type: sigmoid}\n");
  const std::string emitted = to_yaml(original);
  const Config reparsed = parse(emitted, "emitted.yaml");
  EXPECT_EQ(reparsed, original) << emitted;
  EXPECT_EQ(reparsed.model.layers[3].approximate, "tanh");
  EXPECT_EQ(reparsed.model.layers[2].main[1].type, "silu");
  // Only gelu writes `approximate`: the other types would refuse it on the way back in.
  EXPECT_EQ(emitted.find("approximate"), emitted.rfind("approximate")) << emitted;
}

TEST(ConfigActivationLayers, ForeignNamesAndTyposSuggestTheTorchName) {
  expect_layer_error("    - {type: swish}\n",
                     {"model.layers[0].type: unknown value 'swish' (did you mean 'silu'?)"});
  expect_layer_error("    - {type: hard_swish}\n",
                     {"model.layers[0].type: unknown value 'hard_swish' (did you mean 'hardswish'?)"});
  expect_layer_error("    - {type: hard_sigmoid}\n",
                     {"model.layers[0].type: unknown value 'hard_sigmoid' (did you mean 'hardsigmoid'?)"});
  expect_layer_error("    - {type: gelus}\n",
                     {"model.layers[0].type: unknown value 'gelus' (did you mean 'gelu'?)"});
  expect_layer_error("    - {type: relu8}\n",
                     {"model.layers[0].type: unknown value 'relu8' (did you mean 'relu'?)"});
}

TEST(ConfigActivationLayers, KeysOfOtherTypesAndBadGeluFormsAreRefused) {
  expect_layer_error(
      "    - {type: silu, approximate: tanh}\n",
      {"'model.layers[0].approximate' does not apply to a silu layer", "(it takes: type, name)"});
  expect_layer_error("    - {type: relu6, out_channels: 3}\n",
                     {"'model.layers[0].out_channels' does not apply to a relu6 layer"});
  expect_layer_error("    - {type: gelu, approximate: tanhh}\n",
                     {"model.layers[0].approximate: unknown value 'tanhh' (did you mean 'tanh'?)"});
  expect_layer_error("    - {type: gelu, approximate: erf}\n",
                     {"model.layers[0].approximate: unknown value 'erf' (allowed: none, tanh)"});
}

}  // namespace
}  // namespace phalanx::config
