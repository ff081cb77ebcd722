// Sequential container: runs its layers in order, keeping each intermediate activation for
// backward, and reports gradients as final layer by layer in reverse order.
#include "phalanx/core/error.hpp"
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

Shape Sequential::configure(const Shape& sample_input, ParameterRegistry& registry) {
  PHALANX_CHECK(!layers_.empty(), "empty sequential '", name(), "'");
  Shape shape = sample_input;
  sample_shapes_.clear();
  for (auto& layer : layers_) {
    shape = layer->configure(shape, registry);
    sample_shapes_.push_back(shape);
    first_parameter_offset_ = std::min(first_parameter_offset_, layer->first_parameter_offset());
  }
  activations_.resize(layers_.size() - 1);
  gradients_.resize(2);
  return shape;
}

void Sequential::forward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                         Tensor& output, const ForwardContext& context) {
  const std::int64_t batch = input.shape()[0];
  const Tensor* current = &input;
  for (std::size_t index = 0; index < layers_.size(); ++index) {
    Tensor* destination = &output;
    if (index + 1 < layers_.size()) {
      activations_[index].ensure(backend, sample_shapes_[index].batched(batch));
      destination = &activations_[index];
    }
    layers_[index]->forward(backend, registry, *current, *destination, context);
    current = destination;
  }
}

void Sequential::backward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                          const Tensor& output, const Tensor& grad_output, Tensor* grad_input,
                          const GradientsReady& gradients_ready) {
  const Tensor* current_gradient = &grad_output;
  for (std::size_t reverse = layers_.size(); reverse-- > 0;) {
    const Tensor& layer_input = reverse == 0 ? input : activations_[reverse - 1];
    const Tensor& layer_output = reverse + 1 == layers_.size() ? output : activations_[reverse];
    Tensor* destination = nullptr;
    if (reverse == 0) {
      destination = grad_input;
    } else {
      // Ping-pong between two buffers: the gradient being read is never the one being written.
      Tensor& buffer = gradients_[reverse % 2];
      buffer.ensure(backend, layer_input.shape());
      destination = &buffer;
    }
    layers_[reverse]->backward(backend, registry, layer_input, layer_output, *current_gradient, destination,
                               gradients_ready);
    if (gradients_ready && layers_[reverse]->first_parameter_offset() != INT64_MAX)
      gradients_ready(layers_[reverse]->first_parameter_offset());
    current_gradient = destination;
  }
}

}  // namespace phalanx::nn
