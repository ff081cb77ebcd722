// Flatten NHWC images into PyTorch's (C, H, W) feature order. The transpose costs a few
// thousand floats per sample and buys checkpoints whose linear weights load into torch unchanged.
#include "phalanx/core/error.hpp"
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

Shape Flatten::configure(const Shape& sample_input, ParameterRegistry&) {
  if (sample_input.rank() == 1) {
    height_ = width_ = 1;
    channels_ = static_cast<int>(sample_input[0]);
  } else {
    PHALANX_REQUIRE_INPUT(sample_input.rank() == 3, "layer '", name(),
                          "': flatten needs [H, W, C] input, got ", sample_input.to_string());
    height_ = static_cast<int>(sample_input[0]);
    width_ = static_cast<int>(sample_input[1]);
    channels_ = static_cast<int>(sample_input[2]);
  }
  return Shape{sample_input.elements()};
}

void Flatten::forward(backend::Backend& backend, ParameterRegistry&, const Tensor& input, Tensor& output,
                      const ForwardContext&) {
  const std::int64_t spatial = static_cast<std::int64_t>(height_) * width_;
  if (spatial == 1 || channels_ == 1) {
    backend.copy(output.data(), input.data(), input.bytes());
    return;
  }
  backend.transpose_samples(input.shape()[0], spatial, channels_, input.data(), output.data());
}

void Flatten::backward(backend::Backend& backend, ParameterRegistry&, const Tensor&, const Tensor&,
                       const Tensor& grad_output, Tensor* grad_input, const GradientsReady&) {
  if (!grad_input) return;
  const std::int64_t spatial = static_cast<std::int64_t>(height_) * width_;
  if (spatial == 1 || channels_ == 1) {
    backend.copy(grad_input->data(), grad_output.data(), grad_output.bytes());
    return;
  }
  backend.transpose_samples(grad_output.shape()[0], channels_, spatial, grad_output.data(),
                            grad_input->data());
}

}  // namespace phalanx::nn
