// ModelPlan: the first of the two phases that build a Model. It builds the layers of a model
// config for the data's sample shape and class count and configures them once (every layer's
// shapes known, every parameter declared) without allocating anything, so the memory check
// before training reads its sizes from the same walk of the layers that the Model then takes
// over and allocates.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "phalanx/config/config.hpp"
#include "phalanx/nn/layers.hpp"
#include "phalanx/nn/parameter_registry.hpp"

namespace phalanx::nn {

// What a model declares: its parameters (the count Model::summary() prints) and the elements of
// the registry's flat buffers as allocated (each parameter aligned).
struct ModelSize {
  std::int64_t parameters = 0;
  std::int64_t parameter_elements = 0, buffer_elements = 0;
};

class ModelPlan {
 public:
  // `sample_shape` is one image [H, W, C]. Throws InvalidInput (naming the layer) when the model
  // does not fit the data, e.g. its last layer does not give `classes` outputs. `fusion`: see
  // ActivationFusion (names, parameters and checkpoints are the same either way).
  ModelPlan(const config::ModelConfig& model_config, const Shape& sample_shape, int classes,
            ActivationFusion fusion = ActivationFusion::Fused);

  // The size of the model this plan builds, known before anything of it is allocated.
  const ModelSize& size() const { return size_; }
  const Shape& sample_shape() const { return sample_shape_; }
  int classes() const { return classes_; }
  const Sequential& network() const { return *network_; }
  const ParameterRegistry& registry() const { return registry_; }

 private:
  friend class Model;  // takes the configured network and the declared registry over
  Shape sample_shape_;
  int classes_;
  std::unique_ptr<Sequential> network_;
  ParameterRegistry registry_;
  ModelSize size_;
};

// The layer list of a preset (the names of config's model_presets: "fmnist_cnn", "lenet5", the
// ResNets, "resnext50_32x4d", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0") for `classes`
// outputs and the sample's channels; throws InvalidInput for unknown presets or shapes a preset
// cannot take.
std::vector<config::LayerSpec> preset_layers(const std::string& preset, const Shape& sample_shape,
                                             int classes);

// How the layers of an inverted-residual block are named: as torchvision's MobileNetV2 names them
// (<name>/conv/K: the expand and depthwise ConvBNActivation, then the project conv and its BN as two
// entries), or as its MobileNetV3 and EfficientNet do (<name>/block/K: each stage one entry, the
// project conv and BN under one, squeeze-and-excitation one of its own).
enum class InvertedResidualNaming { MobileNetV2, Block };

// One inverted-residual block: its channels, the activation after the expand and depthwise
// convolutions, and its squeeze-and-excitation (none when squeeze_channels is 0).
struct InvertedResidualShape {
  int in_channels = 0, expanded_channels = 0, out_channels = 0;
  int kernel = 3, stride = 1;
  std::string activation = "relu6";
  int squeeze_channels = 0;
  std::string squeeze_activation = "relu", scale_activation = "hardsigmoid";
  float stochastic_depth = 0;
};

// The layers of that block: one residual layer (main path only, no ReLU after, with the stochastic
// depth) when stride 1 keeps the channels, else the plain list (torchvision has no sum there, and no
// stochastic depth either).
std::vector<config::LayerSpec> inverted_residual_layers(const std::string& name,
                                                        const InvertedResidualShape& shape,
                                                        InvertedResidualNaming naming);

// torchvision's _make_divisible: `value` rounded to the nearest multiple of `divisor` (at least the
// divisor), and one divisor more where rounding down lost over 10%.
int make_divisible(double value, int divisor = 8);

// Builds layers from specs; unnamed layers get "<type><n>" names under `prefix`.
std::unique_ptr<Sequential> build_layers(const std::vector<config::LayerSpec>& specs, const std::string& name,
                                         ActivationFusion fusion = ActivationFusion::Fused);

}  // namespace phalanx::nn
