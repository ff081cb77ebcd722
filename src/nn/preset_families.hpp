// The layer lists of the mobile and efficient presets (mobile_presets.cpp), which preset_layers
// hands out by name beside the ResNets of presets.cpp.
#pragma once

#include <vector>

#include "phalanx/config/config.hpp"
#include "phalanx/core/shape.hpp"

namespace phalanx::nn {

// torchvision's mobilenet_v2 (width 1.0): 3,504,872 parameters at 1000 classes.
std::vector<config::LayerSpec> mobilenet_v2_layers(int classes);
// torchvision's mobilenet_v3_small: 2,542,856 parameters at 1000 classes.
std::vector<config::LayerSpec> mobilenet_v3_small_layers(int classes);
// torchvision's efficientnet_b0: 5,288,548 parameters at 1000 classes.
std::vector<config::LayerSpec> efficientnet_b0_layers(int classes);

}  // namespace phalanx::nn
