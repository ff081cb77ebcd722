// The presets of the mobile and efficient networks, layer for layer as torchvision builds them
// (torchvision/models/mobilenetv2.py, mobilenetv3.py, efficientnet.py): the same parameter names
// and shapes, batch norm settings, activations, stochastic depth and classifier dropout, so a
// checkpoint is a state_dict of the torchvision model of the same name and the other way round.
#include <algorithm>

#include "layer_specs.hpp"
#include "phalanx/nn/model_plan.hpp"
#include "preset_families.hpp"

namespace phalanx::nn {
namespace {

void append_block(std::vector<config::LayerSpec>& layers, std::vector<config::LayerSpec> block,
                  BatchNormSettings norm) {
  // The block helper writes torch's default batch norm; MobileNetV3 has its own.
  const auto set_norm = [&norm](auto& self, std::vector<config::LayerSpec>& specs) -> void {
    for (auto& spec : specs) {
      if (spec.type == "batch_norm") {
        spec.batch_norm_momentum = norm.momentum;
        spec.batch_norm_epsilon = norm.epsilon;
      }
      self(self, spec.main);
    }
  };
  set_norm(set_norm, block);
  for (auto& spec : block) layers.push_back(std::move(spec));
}

}  // namespace

std::vector<config::LayerSpec> mobilenet_v2_layers(int classes) {
  std::vector<config::LayerSpec> layers;
  const BatchNormSettings norm;
  append_conv_norm_activation(layers, "features/0", 32, 3, 2, 1, "relu6", norm);
  // t (expansion), c (channels), n (blocks), s (first block's stride), as in torchvision.
  const int settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int in_channels = 32, feature = 1;
  for (const auto& setting : settings) {
    for (int block = 0; block < setting[2]; ++block) {
      InvertedResidualShape shape;
      shape.in_channels = in_channels;
      shape.expanded_channels = in_channels * setting[0];
      shape.out_channels = setting[1];
      shape.stride = block == 0 ? setting[3] : 1;
      shape.activation = "relu6";
      append_block(layers,
                   inverted_residual_layers("features/" + std::to_string(feature++), shape,
                                            InvertedResidualNaming::MobileNetV2),
                   norm);
      in_channels = setting[1];
    }
  }
  append_conv_norm_activation(layers, "features/" + std::to_string(feature), 1280, 1, 1, 1, "relu6", norm);
  layers.push_back(layer_spec("global_avg_pool", "avgpool"));
  layers.push_back(dropout_spec("classifier/0", 0.2f));
  layers.push_back(linear_spec("classifier/1", classes));
  return layers;
}

std::vector<config::LayerSpec> mobilenet_v3_small_layers(int classes) {
  std::vector<config::LayerSpec> layers;
  const BatchNormSettings norm{0.01f, 1e-3f};
  append_conv_norm_activation(layers, "features/0", 16, 3, 2, 1, "hardswish", norm);
  struct Block {
    int kernel, expanded, out;
    bool squeeze_excitation;
    const char* activation;
    int stride;
  };
  const Block blocks[] = {{3, 16, 16, true, "relu", 2},       {3, 72, 24, false, "relu", 2},
                          {3, 88, 24, false, "relu", 1},      {5, 96, 40, true, "hardswish", 2},
                          {5, 240, 40, true, "hardswish", 1}, {5, 240, 40, true, "hardswish", 1},
                          {5, 120, 48, true, "hardswish", 1}, {5, 144, 48, true, "hardswish", 1},
                          {5, 288, 96, true, "hardswish", 2}, {5, 576, 96, true, "hardswish", 1},
                          {5, 576, 96, true, "hardswish", 1}};
  int in_channels = 16, feature = 1;
  for (const Block& block : blocks) {
    InvertedResidualShape shape;
    shape.in_channels = in_channels;
    shape.expanded_channels = block.expanded;
    shape.out_channels = block.out;
    shape.kernel = block.kernel;
    shape.stride = block.stride;
    shape.activation = block.activation;
    if (block.squeeze_excitation) shape.squeeze_channels = make_divisible(block.expanded / 4);
    shape.squeeze_activation = "relu";
    shape.scale_activation = "hardsigmoid";
    append_block(layers,
                 inverted_residual_layers("features/" + std::to_string(feature++), shape,
                                          InvertedResidualNaming::Block),
                 norm);
    in_channels = block.out;
  }
  append_conv_norm_activation(layers, "features/" + std::to_string(feature), 6 * in_channels, 1, 1, 1,
                              "hardswish", norm);
  layers.push_back(layer_spec("global_avg_pool", "avgpool"));
  layers.push_back(linear_spec("classifier/0", 1024));
  layers.push_back(layer_spec("hardswish", "classifier/1"));
  layers.push_back(dropout_spec("classifier/2", 0.2f));
  layers.push_back(linear_spec("classifier/3", classes));
  return layers;
}

std::vector<config::LayerSpec> efficientnet_b0_layers(int classes) {
  std::vector<config::LayerSpec> layers;
  const BatchNormSettings norm;
  append_conv_norm_activation(layers, "features/0", 32, 3, 2, 1, "silu", norm);
  // Expansion, kernel, first stride, output channels, blocks: torchvision's MBConv settings.
  const int stages[7][5] = {{1, 3, 1, 16, 1},  {6, 3, 2, 24, 2},  {6, 5, 2, 40, 2}, {6, 3, 2, 80, 3},
                            {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4}, {6, 3, 1, 320, 1}};
  int total_blocks = 0;
  for (const auto& stage : stages) total_blocks += stage[4];
  // Stochastic depth grows linearly with the block's index, 0.2 * index / blocks, as torchvision
  // sets it (the last block gets 0.2 * 15/16).
  constexpr double stochastic_depth = 0.2;
  int in_channels = 32, block_index = 0;
  for (int stage = 0; stage < 7; ++stage) {
    for (int block = 0; block < stages[stage][4]; ++block) {
      InvertedResidualShape shape;
      shape.in_channels = in_channels;
      shape.expanded_channels = make_divisible(in_channels * static_cast<double>(stages[stage][0]));
      shape.out_channels = stages[stage][3];
      shape.kernel = stages[stage][1];
      shape.stride = block == 0 ? stages[stage][2] : 1;
      shape.activation = "silu";
      shape.squeeze_channels = std::max(1, in_channels / 4);
      shape.squeeze_activation = "silu";
      shape.scale_activation = "sigmoid";
      // torchvision computes it in double and stores a Python float; the nearest float is what a
      // float probability can hold.
      shape.stochastic_depth = static_cast<float>(stochastic_depth * block_index / total_blocks);
      append_block(
          layers,
          inverted_residual_layers("features/" + std::to_string(stage + 1) + "/" + std::to_string(block),
                                   shape, InvertedResidualNaming::Block),
          norm);
      in_channels = stages[stage][3];
      ++block_index;
    }
  }
  append_conv_norm_activation(layers, "features/8", 4 * in_channels, 1, 1, 1, "silu", norm);
  layers.push_back(layer_spec("global_avg_pool", "avgpool"));
  layers.push_back(dropout_spec("classifier/0", 0.2f));
  layers.push_back(linear_spec("classifier/1", classes));
  return layers;
}

}  // namespace phalanx::nn
