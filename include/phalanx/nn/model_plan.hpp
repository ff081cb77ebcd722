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

// The layer list of a preset ("fmnist_cnn", "lenet5", "resnet20") for `classes` outputs and
// input channels; throws InvalidInput for unknown presets or shapes a preset cannot take.
std::vector<config::LayerSpec> preset_layers(const std::string& preset, const Shape& sample_shape,
                                             int classes);

// Builds layers from specs; unnamed layers get "<type><n>" names under `prefix`.
std::unique_ptr<Sequential> build_layers(const std::vector<config::LayerSpec>& specs, const std::string& name,
                                         ActivationFusion fusion = ActivationFusion::Fused);

}  // namespace phalanx::nn
