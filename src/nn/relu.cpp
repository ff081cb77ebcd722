// ReLU layer; backward reads the forward output, so the input need not be kept.
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

Shape Relu::configure(const Shape& sample_input, ParameterRegistry&) {
  return sample_input;
}

void Relu::forward(backend::Backend& backend, ParameterRegistry&, const Tensor& input, Tensor& output,
                   const ForwardContext&) {
  backend.relu_forward(input.elements(), input.data(), output.data());
}

void Relu::backward(backend::Backend& backend, ParameterRegistry&, const Tensor&, const Tensor& output,
                    const Tensor& grad_output, Tensor* grad_input, const GradientsReady&) {
  if (grad_input)
    backend.relu_backward(output.elements(), output.data(), grad_output.data(), grad_input->data());
}

}  // namespace phalanx::nn
