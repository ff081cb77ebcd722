// Activation layer: one of backend::ActivationKind, element-wise and without parameters. Backward
// hands the backend only what the kind's derivative reads (the output for relu6, sigmoid and
// hardsigmoid, the input for the others), so a fused producer, whose layer input and output are
// then one and the same activated buffer, is never asked for values it did not keep.
#include "phalanx/core/error.hpp"
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

Activation::Activation(std::string name, backend::ActivationKind kind)
    : Layer(std::move(name)), kind_(kind) {}

std::string Activation::type() const {
  switch (kind_) {
    case backend::ActivationKind::Relu6: return "relu6";
    case backend::ActivationKind::Sigmoid: return "sigmoid";
    case backend::ActivationKind::Hardsigmoid: return "hardsigmoid";
    case backend::ActivationKind::Silu: return "silu";
    case backend::ActivationKind::Hardswish: return "hardswish";
    case backend::ActivationKind::Gelu:
    case backend::ActivationKind::GeluTanh: return "gelu";
  }
  throw_internal_error("unknown activation kind", __FILE__, __LINE__);
}

Shape Activation::configure(const Shape& sample_input, ParameterRegistry&) {
  return sample_input;
}

void Activation::forward(backend::Backend& backend, ParameterRegistry&, const Tensor& input, Tensor& output,
                         const ForwardContext&) {
  backend.activation_forward(kind_, input.elements(), input.data(), output.data());
}

void Activation::backward(backend::Backend& backend, ParameterRegistry&, const Tensor& input,
                          const Tensor& output, const Tensor& grad_output, Tensor* grad_input,
                          const GradientsReady&) {
  if (!grad_input) return;
  const bool reads_output = backend::backward_reads_output(kind_);
  backend.activation_backward(kind_, output.elements(), reads_output ? nullptr : input.data(),
                              reads_output ? output.data() : nullptr, grad_output.data(), grad_input->data());
}

}  // namespace phalanx::nn
