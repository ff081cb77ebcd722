// Model: the network built from the model config (a preset or an explicit layer list) for a
// given input shape and class count, with its flat parameter registry allocated and initialised.
// It is the second phase of the build: a ModelPlan configures the layers, the Model allocates them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/nn/layers.hpp"
#include "phalanx/nn/model_plan.hpp"
#include "phalanx/nn/parameter_registry.hpp"

namespace phalanx::nn {

class Model {
 public:
  // Takes the plan's configured layers over and allocates its parameters on `backend`,
  // initialised from `seed`: no layer is configured a second time.
  Model(ModelPlan plan, backend::Backend& backend, std::uint64_t seed);
  // Plans and builds in one go; throws InvalidInput as ModelPlan does.
  Model(const config::ModelConfig& model_config, const Shape& sample_shape, int classes,
        backend::Backend& backend, std::uint64_t seed, ActivationFusion fusion = ActivationFusion::Fused);

  // input [batch, H, W, C] -> logits [batch, classes] (kept until the next forward).
  const Tensor& forward(const Tensor& input, const ForwardContext& context);
  // Writes every parameter gradient; reports finished gradients as backward proceeds.
  void backward(const Tensor& input, const Tensor& grad_logits, const GradientsReady& gradients_ready);

  ParameterRegistry& registry() { return registry_; }
  const Shape& sample_shape() const { return sample_shape_; }
  int classes() const { return classes_; }
  backend::Backend& backend() { return backend_; }
  const Sequential& network() const { return *network_; }
  const ModelSize& size() const { return size_; }
  // One line for the log: layer count and parameter count.
  std::string summary() const;

 private:
  backend::Backend& backend_;
  Shape sample_shape_;
  int classes_;
  std::unique_ptr<Sequential> network_;
  ParameterRegistry registry_;
  ModelSize size_;
  Tensor logits_;
};

}  // namespace phalanx::nn
