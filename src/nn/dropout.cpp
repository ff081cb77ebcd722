// Inverted dropout (torch.nn.Dropout). The mask is a pure function of (seed, step, rank,
// layer), so a resumed run draws the same masks as an uninterrupted one.
#include <functional>

#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

Dropout::Dropout(std::string name, float probability) : Layer(std::move(name)), probability_(probability) {}

Shape Dropout::configure(const Shape& sample_input, ParameterRegistry&) {
  return sample_input;
}

void Dropout::forward(backend::Backend& backend, ParameterRegistry&, const Tensor& input, Tensor& output,
                      const ForwardContext& context) {
  last_forward_training_ = context.mode == Mode::Training && probability_ > 0;
  if (!last_forward_training_) {
    backend.copy(output.data(), input.data(), input.bytes());
    return;
  }
  mask_.ensure(backend, input.shape(), DType::UInt8);
  const std::uint64_t layer_hash = fnv1a_hash(name());
  const std::uint64_t stream =
      mix_seed(mix_seed(static_cast<std::uint64_t>(context.step), context.rank), layer_hash);
  backend.dropout_forward(input.elements(), probability_, context.seed, stream, input.data(), output.data(),
                          mask_.data_as<std::uint8_t>());
}

void Dropout::backward(backend::Backend& backend, ParameterRegistry&, const Tensor&, const Tensor&,
                       const Tensor& grad_output, Tensor* grad_input, const GradientsReady&) {
  if (!grad_input) return;
  if (!last_forward_training_) {
    backend.copy(grad_input->data(), grad_output.data(), grad_output.bytes());
    return;
  }
  backend.dropout_backward(grad_output.elements(), probability_, mask_.data_as<std::uint8_t>(),
                           grad_output.data(), grad_input->data());
}

}  // namespace phalanx::nn
