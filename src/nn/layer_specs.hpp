// Builders of config::LayerSpec for the code that writes layer lists itself: the presets, and the
// blocks that build their inner layers once they know their input. One place says which fields
// each kind of layer sets, so every list names and sizes its layers the same way.
#pragma once

#include <string>
#include <vector>

#include "phalanx/config/config.hpp"

namespace phalanx::nn {

// Batch norm's momentum and eps, torch's defaults unless a network sets its own (MobileNetV3).
struct BatchNormSettings {
  float momentum = 0.1f, epsilon = 1e-5f;
};

// A layer that needs nothing but its type and name (relu, batch_norm, flatten, residual, ...).
config::LayerSpec layer_spec(const std::string& type, const std::string& name);

config::LayerSpec conv_spec(const std::string& name, int out_channels, int kernel, int stride, int padding,
                            bool bias, int groups = 1);

// A max pool whose stride is its kernel.
config::LayerSpec max_pool_spec(const std::string& name, int kernel);

config::LayerSpec linear_spec(const std::string& name, int out_features);

config::LayerSpec dropout_spec(const std::string& name, float probability);

// torchvision's Conv2dNormActivation: <name>/0 conv (padding (k-1)/2, no bias), <name>/1 batch
// norm, <name>/2 activation, appended to `layers`.
void append_conv_norm_activation(std::vector<config::LayerSpec>& layers, const std::string& name,
                                 int out_channels, int kernel, int stride, int groups,
                                 const std::string& activation, BatchNormSettings norm = {});

}  // namespace phalanx::nn
