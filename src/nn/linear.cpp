// Fully connected layer: weight [out, in] and optional bias, as torch.nn.Linear.
#include "phalanx/core/error.hpp"
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

Linear::Linear(std::string name, int out_features, bool bias)
    : Layer(std::move(name)), out_features_(out_features), bias_(bias) {}

Shape Linear::configure(const Shape& sample_input, ParameterRegistry& registry) {
  // An image reaches a linear layer only through flatten (which fixes PyTorch's feature order)
  // or as a 1x1 map after global pooling, where the orders agree.
  const bool flat =
      sample_input.rank() == 1 || (sample_input.rank() == 3 && sample_input[0] == 1 && sample_input[1] == 1);
  PHALANX_REQUIRE_INPUT(flat, "layer '", name(),
                        "': linear needs flat input; add a flatten layer before it (input is ",
                        sample_input.to_string(), ")");
  require_sample_fits(sample_input.elements());  // its in_features are an int
  in_features_ = static_cast<int>(sample_input.elements());
  weight_ = registry.declare_parameter(name() + "/weight", Shape{out_features_, in_features_},
                                       Initializer::KaimingUniformWeight, in_features_);
  note_parameter(registry, weight_);
  if (bias_) {
    bias_index_ = registry.declare_parameter(name() + "/bias", Shape{out_features_},
                                             Initializer::FanInUniformBias, in_features_);
    note_parameter(registry, bias_index_);
  }
  return Shape{out_features_};
}

void Linear::forward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                     Tensor& output, const ForwardContext&) {
  backend::LinearGeometry geometry{static_cast<int>(input.shape()[0]), in_features_, out_features_};
  geometry.activation = fused_activation_;
  backend.linear_forward(geometry, input.data(), registry.parameter(weight_),
                         bias_ ? registry.parameter(bias_index_) : nullptr, output.data());
}

void Linear::backward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                      const Tensor&, const Tensor& grad_output, Tensor* grad_input, const GradientsReady&) {
  const backend::LinearGeometry geometry{static_cast<int>(input.shape()[0]), in_features_, out_features_};
  backend.linear_backward(geometry, input.data(), registry.parameter(weight_), grad_output.data(),
                          grad_input ? grad_input->data() : nullptr, registry.gradient(weight_),
                          bias_ ? registry.gradient(bias_index_) : nullptr);
}

}  // namespace phalanx::nn
