// Batch normalisation over channels (torch BatchNorm2d / BatchNorm1d): weight, bias and the
// running statistics, which are buffers (not learnable) and are saved in checkpoints. With its
// weight and bias frozen (train.freeze) it is torchvision's FrozenBatchNorm2d: a fixed per-channel
// affine map from the running statistics, in training as in evaluation, which stay as they are.
#include <cmath>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

BatchNorm::BatchNorm(std::string name, float momentum, float epsilon)
    : Layer(std::move(name)), momentum_(momentum), epsilon_(epsilon) {}

Shape BatchNorm::configure(const Shape& sample_input, ParameterRegistry& registry) {
  PHALANX_REQUIRE_INPUT(sample_input.rank() == 3 || sample_input.rank() == 1, "layer '", name(),
                        "': batch_norm needs [H, W, C] or [F] input, got ", sample_input.to_string());
  channels_ = static_cast<int>(sample_input[sample_input.rank() - 1]);
  spatial_ = static_cast<int>(sample_input.elements() / channels_);
  gamma_ = registry.declare_parameter(name() + "/weight", Shape{channels_}, Initializer::Ones, channels_);
  beta_ = registry.declare_parameter(name() + "/bias", Shape{channels_}, Initializer::Zeros, channels_);
  note_parameter(registry, gamma_);
  running_mean_ = registry.declare_buffer(name() + "/running_mean", Shape{channels_}, Initializer::Zeros);
  running_variance_ = registry.declare_buffer(name() + "/running_var", Shape{channels_}, Initializer::Ones);
  return sample_input;
}

backend::BatchNormGeometry BatchNorm::geometry(std::int64_t batch) const {
  return backend::BatchNormGeometry{static_cast<int>(batch), channels_, spatial_, epsilon_};
}

void BatchNorm::forward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                        Tensor& output, const ForwardContext& context) {
  auto shape = geometry(input.shape()[0]);
  shape.activation = fused_activation_;
  if (context.mode == Mode::Training && !frozen(registry)) {
    saved_mean_.ensure(backend, Shape{channels_});
    saved_inverse_std_.ensure(backend, Shape{channels_});
    backend.batch_norm_forward_training(shape, input.data(), registry.parameter(gamma_),
                                        registry.parameter(beta_), output.data(),
                                        registry.buffer(running_mean_), registry.buffer(running_variance_),
                                        momentum_, saved_mean_.data(), saved_inverse_std_.data());
  } else {
    backend.batch_norm_forward_inference(shape, input.data(), registry.parameter(gamma_),
                                         registry.parameter(beta_), registry.buffer(running_mean_),
                                         registry.buffer(running_variance_), output.data());
  }
}

void BatchNorm::backward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                         const Tensor&, const Tensor& grad_output, Tensor* grad_input,
                         const GradientsReady&) {
  // The backend computes the input gradient together with gamma/beta's; as the first layer
  // nobody wants it, so it goes to scratch.
  if (!grad_input) {
    scratch_gradient_.ensure(backend, input.shape());
    grad_input = &scratch_gradient_;
  }
  if (frozen(registry)) {
    frozen_backward(backend, registry, grad_output, *grad_input);
    return;
  }
  backend.batch_norm_backward(geometry(input.shape()[0]), input.data(), grad_output.data(),
                              registry.parameter(gamma_), saved_mean_.data(), saved_inverse_std_.data(),
                              grad_input->data(), registry.gradient(gamma_), registry.gradient(beta_));
}

bool BatchNorm::frozen(const ParameterRegistry& registry) const {
  return registry.frozen(gamma_) && registry.frozen(beta_);
}

// The frozen map is y = x * scale + shift per channel, so grad_input = grad_output * scale: the
// data gradient of a 1x1 depthwise convolution whose weights are the scales, which every backend
// has. Weight, bias and statistics cannot change while frozen, so the scales are computed once.
void BatchNorm::frozen_backward(backend::Backend& backend, ParameterRegistry& registry,
                                const Tensor& grad_output, Tensor& grad_input) {
  if (frozen_scale_.empty()) {
    std::vector<float> gamma(static_cast<std::size_t>(channels_)), variance(gamma.size());
    backend.copy_to_host(gamma.data(), registry.parameter(gamma_), gamma.size() * sizeof(float));
    backend.copy_to_host(variance.data(), registry.buffer(running_variance_),
                         variance.size() * sizeof(float));
    for (std::size_t channel = 0; channel < gamma.size(); ++channel)
      gamma[channel] /= std::sqrt(variance[channel] + epsilon_);
    frozen_scale_ = Tensor(backend, Shape{channels_, 1, 1, 1});
    backend.copy_from_host(frozen_scale_.data(), gamma.data(), gamma.size() * sizeof(float));
  }
  backend::ConvolutionGeometry depthwise;
  depthwise.batch = static_cast<int>(grad_output.shape()[0]);
  depthwise.in_channels = depthwise.out_channels = depthwise.groups = channels_;
  depthwise.in_height = spatial_;  // NHWC: the spatial positions in one row are the same memory
  depthwise.in_width = 1;
  depthwise.kernel_height = depthwise.kernel_width = 1;
  depthwise.has_bias = false;
  backend.convolution_backward_data(depthwise, grad_output.data(), frozen_scale_.data(), grad_input.data());
}

}  // namespace phalanx::nn
