// 2-D convolution layer: weight [out, in, k, k] and optional bias, as torch.nn.Conv2d.
#include "phalanx/core/error.hpp"
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

Convolution::Convolution(std::string name, int out_channels, int kernel, int stride, int padding, bool bias)
    : Layer(std::move(name)),
      out_channels_(out_channels),
      kernel_(kernel),
      stride_(stride),
      padding_(padding),
      bias_(bias) {}

Shape Convolution::configure(const Shape& sample_input, ParameterRegistry& registry) {
  PHALANX_REQUIRE_INPUT(sample_input.rank() == 3, "layer '", name(),
                        "': conv needs an image input [H, W, C], got ", sample_input.to_string());
  in_height_ = static_cast<int>(sample_input[0]);
  in_width_ = static_cast<int>(sample_input[1]);
  in_channels_ = static_cast<int>(sample_input[2]);
  const auto probe = geometry(1);
  PHALANX_REQUIRE_INPUT(probe.out_height() >= 1 && probe.out_width() >= 1, "layer '", name(), "': a ",
                        kernel_, "x", kernel_, " conv with padding ", padding_, " does not fit its ",
                        in_height_, "x", in_width_, " input (the model does not fit the data)");
  const std::int64_t fan_in = static_cast<std::int64_t>(in_channels_) * kernel_ * kernel_;
  weight_ =
      registry.declare_parameter(name() + "/weight", Shape{out_channels_, in_channels_, kernel_, kernel_},
                                 Initializer::KaimingUniformWeight, fan_in);
  note_parameter(registry, weight_);
  if (bias_) {
    bias_index_ = registry.declare_parameter(name() + "/bias", Shape{out_channels_},
                                             Initializer::FanInUniformBias, fan_in);
    note_parameter(registry, bias_index_);
  }
  return Shape{probe.out_height(), probe.out_width(), out_channels_};
}

backend::ConvolutionGeometry Convolution::geometry(std::int64_t batch) const {
  backend::ConvolutionGeometry geometry;
  geometry.batch = static_cast<int>(batch);
  geometry.in_channels = in_channels_;
  geometry.in_height = in_height_;
  geometry.in_width = in_width_;
  geometry.out_channels = out_channels_;
  geometry.kernel_height = geometry.kernel_width = kernel_;
  geometry.stride = stride_;
  geometry.padding = padding_;
  geometry.has_bias = bias_;
  return geometry;
}

void Convolution::forward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                          Tensor& output, const ForwardContext&) {
  auto shape = geometry(input.shape()[0]);
  shape.activation = fused_activation_;
  backend.convolution_forward(shape, input.data(), registry.parameter(weight_),
                              bias_ ? registry.parameter(bias_index_) : nullptr, output.data());
}

void Convolution::backward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                           const Tensor&, const Tensor& grad_output, Tensor* grad_input,
                           const GradientsReady&) {
  // One call for both directions: a GPU backend computing in bf16/fp16 converts grad_output once.
  backend.convolution_backward(geometry(input.shape()[0]), input.data(), grad_output.data(),
                               registry.parameter(weight_), grad_input ? grad_input->data() : nullptr,
                               registry.gradient(weight_), bias_ ? registry.gradient(bias_index_) : nullptr);
}

}  // namespace phalanx::nn
