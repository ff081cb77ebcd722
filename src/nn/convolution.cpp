// 2-D convolution layer: weight [out, in / groups, k, k] and optional bias, as torch.nn.Conv2d
// (groups and dilation included).
#include "phalanx/core/error.hpp"
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

Convolution::Convolution(std::string name, int out_channels, int kernel, int stride, int padding, int groups,
                         int dilation, bool bias)
    : Layer(std::move(name)),
      out_channels_(out_channels),
      kernel_(kernel),
      stride_(stride),
      padding_(padding),
      groups_(groups),
      dilation_(dilation),
      bias_(bias) {}

Shape Convolution::configure(const Shape& sample_input, ParameterRegistry& registry) {
  PHALANX_REQUIRE_INPUT(sample_input.rank() == 3, "layer '", name(),
                        "': conv needs an image input [H, W, C], got ", sample_input.to_string());
  in_height_ = static_cast<int>(sample_input[0]);
  in_width_ = static_cast<int>(sample_input[1]);
  in_channels_ = static_cast<int>(sample_input[2]);
  PHALANX_REQUIRE_INPUT(groups_ >= 1, "layer '", name(), "': groups must be >= 1 (got ", groups_, ")");
  PHALANX_REQUIRE_INPUT(dilation_ >= 1, "layer '", name(), "': dilation must be >= 1 (got ", dilation_, ")");
  PHALANX_REQUIRE_INPUT(in_channels_ % groups_ == 0 && out_channels_ % groups_ == 0, "layer '", name(),
                        "': groups ", groups_, " must divide both its ", in_channels_,
                        " input channels and its ", out_channels_, " out_channels");
  // Checked before the output size, in 64 bits (a config may say dilation 2^30): C++ division
  // truncates towards zero, so a kernel one tap wider than the padded input would still come out as
  // one output row.
  const std::int64_t dilated_kernel = std::int64_t{dilation_} * (kernel_ - 1) + 1;
  const std::int64_t padded_height = in_height_ + std::int64_t{2} * padding_;
  const std::int64_t padded_width = in_width_ + std::int64_t{2} * padding_;
  const bool fits = dilated_kernel <= padded_height && dilated_kernel <= padded_width;
  if (dilation_ == 1) {
    PHALANX_REQUIRE_INPUT(fits, "layer '", name(), "': a ", kernel_, "x", kernel_, " conv with padding ",
                          padding_, " does not fit its ", in_height_, "x", in_width_,
                          " input (the model does not fit the data)");
  } else {
    PHALANX_REQUIRE_INPUT(fits, "layer '", name(), "': a ", kernel_, "x", kernel_, " conv with dilation ",
                          dilation_, " spans ", dilated_kernel, "x", dilated_kernel, ", more than its ",
                          in_height_, "x", in_width_, " input with padding ", padding_,
                          " (the model does not fit the data)");
  }
  require_stride_within(padded_height, padded_width, stride_, padding_);
  require_sample_fits((padded_height - dilated_kernel) / stride_ + 1,
                      (padded_width - dilated_kernel) / stride_ + 1, out_channels_);
  const auto probe = geometry(1);
  // PyTorch's fan-in of a grouped convolution: the inputs one output channel reads.
  const std::int64_t fan_in = static_cast<std::int64_t>(probe.group_in_channels()) * kernel_ * kernel_;
  weight_ = registry.declare_parameter(name() + "/weight",
                                       Shape{out_channels_, probe.group_in_channels(), kernel_, kernel_},
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
  geometry.groups = groups_;
  geometry.dilation = dilation_;
  geometry.has_bias = bias_;
  return geometry;
}

std::int64_t Convolution::sample_multiply_adds() const {
  const backend::ConvolutionGeometry shape = geometry(1);
  return std::int64_t{shape.out_height()} * shape.out_width() * out_channels_ * (in_channels_ / groups_) *
         kernel_ * kernel_;
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
  // Frozen (train.freeze): its weight gradient is never used, so only the data gradient is computed.
  if (registry.frozen(weight_) && (!bias_ || registry.frozen(bias_index_))) {
    if (grad_input)
      backend.convolution_backward_data(geometry(input.shape()[0]), grad_output.data(),
                                        registry.parameter(weight_), grad_input->data());
    return;
  }
  // One call for both directions: a GPU backend computing in bf16/fp16 converts grad_output once.
  backend.convolution_backward(geometry(input.shape()[0]), input.data(), grad_output.data(),
                               registry.parameter(weight_), grad_input ? grad_input->data() : nullptr,
                               registry.gradient(weight_), bias_ ? registry.gradient(bias_index_) : nullptr);
}

}  // namespace phalanx::nn
