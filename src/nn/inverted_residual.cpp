// Inverted-residual blocks (Sandler et al. 2018, MobileNetV2; with squeeze-and-excitation in
// MobileNetV3 and EfficientNet): the layer list of one block with torchvision's names, for the
// presets and for the config's inverted_residual layer, which builds it once it knows its input.
#include <cmath>

#include "layer_specs.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/nn/model_plan.hpp"

namespace phalanx::nn {
int make_divisible(double value, int divisor) {
  int rounded = std::max(divisor, static_cast<int>(value + divisor / 2.0) / divisor * divisor);
  if (rounded < 0.9 * value) rounded += divisor;
  return rounded;
}

std::vector<config::LayerSpec> inverted_residual_layers(const std::string& name,
                                                        const InvertedResidualShape& shape,
                                                        InvertedResidualNaming naming) {
  const std::string prefix = name + (naming == InvertedResidualNaming::MobileNetV2 ? "/conv/" : "/block/");
  std::vector<config::LayerSpec> layers;
  int index = 0;
  if (shape.expanded_channels != shape.in_channels)
    append_conv_norm_activation(layers, prefix + std::to_string(index++), shape.expanded_channels, 1, 1, 1,
                                shape.activation);
  append_conv_norm_activation(layers, prefix + std::to_string(index++), shape.expanded_channels, shape.kernel,
                              shape.stride, shape.expanded_channels, shape.activation);
  if (shape.squeeze_channels > 0) {
    config::LayerSpec squeeze = layer_spec("squeeze_excitation", prefix + std::to_string(index++));
    squeeze.squeeze_channels = shape.squeeze_channels;
    squeeze.activation = shape.squeeze_activation;
    squeeze.scale_activation = shape.scale_activation;
    layers.push_back(squeeze);
  }
  if (naming == InvertedResidualNaming::MobileNetV2) {
    layers.push_back(conv_spec(prefix + std::to_string(index), shape.out_channels, 1, 1, 0, false));
    layers.push_back(layer_spec("batch_norm", prefix + std::to_string(index + 1)));
  } else {
    layers.push_back(conv_spec(prefix + std::to_string(index) + "/0", shape.out_channels, 1, 1, 0, false));
    layers.push_back(layer_spec("batch_norm", prefix + std::to_string(index) + "/1"));
  }
  if (shape.stride != 1 || shape.in_channels != shape.out_channels) return layers;
  config::LayerSpec residual = layer_spec("residual", name);
  residual.main = std::move(layers);
  residual.relu_after = false;
  residual.stochastic_depth = shape.stochastic_depth;
  return {residual};
}

InvertedResidual::InvertedResidual(std::string name, config::LayerSpec spec, ActivationFusion fusion)
    : Layer(std::move(name)), spec_(std::move(spec)), fusion_(fusion) {}

Shape InvertedResidual::configure(const Shape& sample_input, ParameterRegistry& registry) {
  PHALANX_REQUIRE_INPUT(sample_input.rank() == 3, "layer '", name(),
                        "': inverted_residual takes images [H, W, C], got ", sample_input.to_string());
  InvertedResidualShape shape;
  shape.in_channels = static_cast<int>(sample_input[2]);
  // Python's round(), half to even, as torchvision's MobileNetV2 rounds the hidden width.
  shape.expanded_channels =
      static_cast<int>(std::nearbyint(static_cast<double>(shape.in_channels) * spec_.expand_ratio));
  shape.out_channels = spec_.out_channels;
  shape.kernel = spec_.kernel;
  shape.stride = spec_.stride;
  shape.activation = spec_.activation;
  // MobileNetV3's rule: the expanded channels times the ratio, to a multiple of 8; ReLU, then a
  // hard sigmoid.
  if (spec_.squeeze_excitation > 0)
    shape.squeeze_channels =
        make_divisible(shape.expanded_channels * static_cast<double>(spec_.squeeze_excitation));
  shape.stochastic_depth = spec_.stochastic_depth;
  PHALANX_REQUIRE_INPUT(spec_.kernel % 2 == 1, "layer '", name(),
                        "': inverted_residual needs an odd kernel, got ", spec_.kernel);
  body_ =
      build_layers(inverted_residual_layers(name(), shape, InvertedResidualNaming::Block), name(), fusion_);
  const Shape output = body_->configure(sample_input, registry);
  first_parameter_offset_ = body_->first_parameter_offset();
  return output;
}

void InvertedResidual::forward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                               Tensor& output, const ForwardContext& context) {
  body_->forward(backend, registry, input, output, context);
}

void InvertedResidual::backward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                                const Tensor& output, const Tensor& grad_output, Tensor* grad_input,
                                const GradientsReady& gradients_ready) {
  body_->backward(backend, registry, input, output, grad_output, grad_input, gradients_ready);
}

}  // namespace phalanx::nn
