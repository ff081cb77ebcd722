// Max, average and global-average pooling layers (torch MaxPool2d / AvgPool2d / AdaptiveAvgPool2d(1)).
#include "phalanx/core/error.hpp"
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

Pooling::Pooling(std::string name, backend::PoolingKind kind, int kernel, int stride, int padding,
                 bool global)
    : Layer(std::move(name)),
      kind_(kind),
      kernel_(kernel),
      stride_(stride),
      padding_(padding),
      global_(global) {}

std::string Pooling::type() const {
  if (global_) return "global_avg_pool";
  return kind_ == backend::PoolingKind::Max ? "max_pool" : "avg_pool";
}

Shape Pooling::configure(const Shape& sample_input, ParameterRegistry&) {
  PHALANX_REQUIRE_INPUT(sample_input.rank() == 3, "layer '", name(),
                        "': pooling needs an image input [H, W, C], got ", sample_input.to_string());
  in_height_ = static_cast<int>(sample_input[0]);
  in_width_ = static_cast<int>(sample_input[1]);
  channels_ = static_cast<int>(sample_input[2]);
  if (global_) {
    // One window over the whole image: its height and width may differ; the stride never
    // applies (one output position), so 1.
    stride_ = 1;
    padding_ = 0;
  }
  // Computed in 64 bits before the geometry's ints are: a config may give any padding.
  const std::int64_t padded_height = in_height_ + std::int64_t{2} * padding_;
  const std::int64_t padded_width = in_width_ + std::int64_t{2} * padding_;
  const std::int64_t window_height = global_ ? in_height_ : kernel_,
                     window_width = global_ ? in_width_ : kernel_;
  PHALANX_REQUIRE_INPUT(window_height <= padded_height && window_width <= padded_width, "layer '", name(),
                        "': a ", kernel_, "x", kernel_, " pool does not fit its ", in_height_, "x", in_width_,
                        " input (the model does not fit the data)");
  // As torch.nn.MaxPool2d and AvgPool2d: a window wholly in the padding has nothing to pool.
  PHALANX_REQUIRE_INPUT(global_ || 2 * std::int64_t{padding_} <= kernel_, "layer '", name(), "': padding ",
                        padding_, " is more than half its ", kernel_, "x", kernel_, " window");
  require_stride_within(padded_height, padded_width, stride_, padding_);
  require_sample_fits((padded_height - window_height) / stride_ + 1,
                      (padded_width - window_width) / stride_ + 1, channels_);
  const auto probe = geometry(1);
  return Shape{probe.out_height(), probe.out_width(), channels_};
}

backend::PoolingGeometry Pooling::geometry(std::int64_t batch) const {
  backend::PoolingGeometry geometry;
  geometry.batch = static_cast<int>(batch);
  geometry.channels = channels_;
  geometry.in_height = in_height_;
  geometry.in_width = in_width_;
  geometry.kernel_height = global_ ? in_height_ : kernel_;
  geometry.kernel_width = global_ ? in_width_ : kernel_;
  geometry.stride = stride_;
  geometry.padding = padding_;
  geometry.kind = global_ ? backend::PoolingKind::Average : kind_;
  return geometry;
}

void Pooling::forward(backend::Backend& backend, ParameterRegistry&, const Tensor& input, Tensor& output,
                      const ForwardContext&) {
  const auto shape = geometry(input.shape()[0]);
  const std::size_t bytes = backend.pooling_workspace_bytes(shape);
  if (bytes) workspace_.ensure(backend, Shape{static_cast<std::int64_t>(bytes)}, DType::UInt8);
  backend.pooling_forward(shape, input.data(), output.data(), bytes ? workspace_.data_as<void>() : nullptr);
}

void Pooling::backward(backend::Backend& backend, ParameterRegistry&, const Tensor& input, const Tensor&,
                       const Tensor& grad_output, Tensor* grad_input, const GradientsReady&) {
  if (!grad_input) return;
  const auto shape = geometry(input.shape()[0]);
  const bool has_workspace = backend.pooling_workspace_bytes(shape) > 0;
  backend.pooling_backward(shape, grad_output.data(), has_workspace ? workspace_.data_as<void>() : nullptr,
                           grad_input->data());
}

}  // namespace phalanx::nn
