// Builders of config::LayerSpec for the presets and the blocks that write layer lists themselves
// (layer_specs.hpp).
#include "layer_specs.hpp"

namespace phalanx::nn {

config::LayerSpec layer_spec(const std::string& type, const std::string& name) {
  config::LayerSpec spec;
  spec.type = type;
  spec.name = name;
  return spec;
}

config::LayerSpec conv_spec(const std::string& name, int out_channels, int kernel, int stride, int padding,
                            bool bias, int groups) {
  config::LayerSpec spec = layer_spec("conv", name);
  spec.out_channels = out_channels;
  spec.kernel = kernel;
  spec.stride = stride;
  spec.padding = padding;
  spec.groups = groups;
  spec.bias = bias;
  return spec;
}

config::LayerSpec max_pool_spec(const std::string& name, int kernel) {
  config::LayerSpec spec = layer_spec("max_pool", name);
  spec.kernel = kernel;
  spec.stride = kernel;
  return spec;
}

config::LayerSpec linear_spec(const std::string& name, int out_features) {
  config::LayerSpec spec = layer_spec("linear", name);
  spec.out_features = out_features;
  return spec;
}

config::LayerSpec dropout_spec(const std::string& name, float probability) {
  config::LayerSpec spec = layer_spec("dropout", name);
  spec.probability = probability;
  return spec;
}

void append_conv_norm_activation(std::vector<config::LayerSpec>& layers, const std::string& name,
                                 int out_channels, int kernel, int stride, int groups,
                                 const std::string& activation, BatchNormSettings norm) {
  layers.push_back(conv_spec(name + "/0", out_channels, kernel, stride, (kernel - 1) / 2, false, groups));
  config::LayerSpec batch_norm = layer_spec("batch_norm", name + "/1");
  batch_norm.batch_norm_momentum = norm.momentum;
  batch_norm.batch_norm_epsilon = norm.epsilon;
  layers.push_back(batch_norm);
  layers.push_back(layer_spec(activation, name + "/2"));
}

}  // namespace phalanx::nn
