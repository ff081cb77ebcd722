// Squeeze-and-excitation (Hu et al. 2018; torchvision.ops.SqueezeExcitation): a per-channel gate
// computed from the channel means. Its squeeze path is an ordinary Sequential of layers (pool,
// fc1, activation, fc2, scale activation) built once the input channels are known, so it reuses
// their forward, backward and fusion; only the gating is an op of its own.
#include "layer_specs.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/nn/model_plan.hpp"

namespace phalanx::nn {
SqueezeExcitation::SqueezeExcitation(std::string name, int squeeze_channels, std::string activation,
                                     std::string scale_activation, ActivationFusion fusion)
    : Layer(std::move(name)),
      squeeze_channels_(squeeze_channels),
      activation_(std::move(activation)),
      scale_activation_(std::move(scale_activation)),
      fusion_(fusion) {}

Shape SqueezeExcitation::configure(const Shape& sample_input, ParameterRegistry& registry) {
  PHALANX_REQUIRE_INPUT(sample_input.rank() == 3, "layer '", name(),
                        "': squeeze_excitation takes images [H, W, C], got ", sample_input.to_string());
  PHALANX_REQUIRE_INPUT(squeeze_channels_ >= 1, "layer '", name(), "': squeeze_channels must be at least 1");
  spatial_ = sample_input[0] * sample_input[1];
  channels_ = sample_input[2];
  const std::string prefix = name() + "/";
  squeeze_ = build_layers({layer_spec("global_avg_pool", prefix + "avgpool"),
                           conv_spec(prefix + "fc1", squeeze_channels_, 1, 1, 0, true),
                           layer_spec(activation_, prefix + "activation"),
                           conv_spec(prefix + "fc2", static_cast<int>(channels_), 1, 1, 0, true),
                           layer_spec(scale_activation_, prefix + "scale_activation")},
                          name(), fusion_);
  const Shape scale_shape = squeeze_->configure(sample_input, registry);
  PHALANX_CHECK(scale_shape == (Shape{1, 1, channels_}), "squeeze path of '", name(), "' gives ",
                scale_shape.to_string());
  first_parameter_offset_ = squeeze_->first_parameter_offset();
  return sample_input;
}

std::int64_t SqueezeExcitation::sample_activation_elements(std::int64_t input_elements) const {
  // The squeeze path's buffers, the scale and its gradient, and the path's input gradient.
  return squeeze_->sample_activation_elements() + 2 * channels_ + input_elements;
}

void SqueezeExcitation::forward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                                Tensor& output, const ForwardContext& context) {
  const std::int64_t batch = input.shape()[0];
  scale_.ensure(backend, Shape{batch, 1, 1, channels_});
  squeeze_->forward(backend, registry, input, scale_, context);
  backend.channel_scale_forward(batch, spatial_, channels_, input.data(), scale_.data(), output.data());
}

void SqueezeExcitation::backward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                                 const Tensor&, const Tensor& grad_output, Tensor* grad_input,
                                 const GradientsReady& gradients_ready) {
  const std::int64_t batch = input.shape()[0];
  grad_scale_.ensure(backend, scale_.shape());
  backend.channel_scale_backward(batch, spatial_, channels_, input.data(), scale_.data(), grad_output.data(),
                                 grad_input ? grad_input->data() : nullptr, grad_scale_.data());
  // The input reaches the output twice, through the gate and through the squeeze path: the input
  // gradient is the sum of both.
  Tensor* path_destination = nullptr;
  if (grad_input) {
    path_gradient_.ensure(backend, input.shape());
    path_destination = &path_gradient_;
  }
  squeeze_->backward(backend, registry, input, scale_, grad_scale_, path_destination, gradients_ready);
  if (grad_input) backend.accumulate(input.elements(), path_gradient_.data(), grad_input->data());
}

}  // namespace phalanx::nn
