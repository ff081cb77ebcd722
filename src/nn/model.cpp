// The second phase of building a Model (allocating what a ModelPlan configured), and the
// forward/backward entry points.
#include "phalanx/nn/model.hpp"

#include <sstream>

#include "phalanx/core/error.hpp"

namespace phalanx::nn {

Model::Model(ModelPlan plan, backend::Backend& backend, std::uint64_t seed)
    : backend_(backend),
      sample_shape_(plan.sample_shape_),
      classes_(plan.classes_),
      network_(std::move(plan.network_)),
      registry_(std::move(plan.registry_)),
      size_(plan.size_) {
  registry_.allocate(backend, seed);
}

Model::Model(const config::ModelConfig& model_config, const Shape& sample_shape, int classes,
             backend::Backend& backend, std::uint64_t seed, ActivationFusion fusion)
    : Model(ModelPlan(model_config, sample_shape, classes, fusion), backend, seed) {}

const Tensor& Model::forward(const Tensor& input, const ForwardContext& context) {
  PHALANX_CHECK(input.shape().rank() == 4, "model input must be [batch, H, W, C]");
  logits_.ensure(backend_, Shape{input.shape()[0], classes_});
  network_->forward(backend_, registry_, input, logits_, context);
  return logits_;
}

void Model::backward(const Tensor& input, const Tensor& grad_logits, const GradientsReady& gradients_ready) {
  network_->backward(backend_, registry_, input, logits_, grad_logits, nullptr, gradients_ready);
}

std::string Model::summary() const {
  std::ostringstream text;
  text << "model: " << network_->layers().size() << " layers, " << size_.parameters << " parameters";
  return text.str();
}

}  // namespace phalanx::nn
