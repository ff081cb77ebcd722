// Model: the network built from the model config (a preset or an explicit layer list) for a
// given input shape and class count, with its flat parameter registry.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/nn/layers.hpp"
#include "phalanx/nn/parameter_registry.hpp"

namespace phalanx::nn {

class Model {
 public:
  // `sample_shape` is one image [H, W, C]. Throws InvalidInput (naming the layer) when the model
  // does not fit the data, e.g. its last layer does not give `classes` outputs. `fusion`: see
  // ReluFusion (names, parameters and checkpoints are the same either way).
  Model(const config::ModelConfig& model_config, const Shape& sample_shape, int classes,
        backend::Backend& backend, std::uint64_t seed, ReluFusion fusion = ReluFusion::Fused);

  // input [batch, H, W, C] -> logits [batch, classes] (kept until the next forward).
  const Tensor& forward(const Tensor& input, const ForwardContext& context);
  // Writes every parameter gradient; reports finished gradients as backward proceeds.
  void backward(const Tensor& input, const Tensor& grad_logits, const GradientsReady& gradients_ready);

  ParameterRegistry& registry() { return registry_; }
  const Shape& sample_shape() const { return sample_shape_; }
  int classes() const { return classes_; }
  backend::Backend& backend() { return backend_; }
  const Sequential& network() const { return *network_; }
  // One line for the log: layer count and parameter count.
  std::string summary() const;

 private:
  backend::Backend& backend_;
  Shape sample_shape_;
  int classes_;
  std::unique_ptr<Sequential> network_;
  ParameterRegistry registry_;
  Tensor logits_;
};

// What a model declares: its parameters (the count summary() prints) and the elements of the
// registry's flat buffers as allocated (each parameter aligned).
struct ModelSize {
  std::int64_t parameters = 0;
  std::int64_t parameter_elements = 0, buffer_elements = 0;
};

// The size of the model that `model_config` builds for this data, found without allocating it
// (the memory check before the model is built). Throws InvalidInput as the constructor does.
ModelSize model_size(const config::ModelConfig& model_config, const Shape& sample_shape, int classes);

// The layer list of a preset ("fmnist_cnn", "lenet5", "resnet20") for `classes` outputs and
// input channels; throws InvalidInput for unknown presets or shapes a preset cannot take.
std::vector<config::LayerSpec> preset_layers(const std::string& preset, const Shape& sample_shape,
                                             int classes);

// Builds layers from specs; unnamed layers get "<type><n>" names under `prefix`.
std::unique_ptr<Sequential> build_layers(const std::vector<config::LayerSpec>& specs, const std::string& name,
                                         ReluFusion fusion = ReluFusion::Fused);

}  // namespace phalanx::nn
