// Sequential container: runs its layers in order, keeping each intermediate activation for
// backward, and reports gradients as final layer by layer in reverse order. An activation fused
// into the layer before it shares that layer's output buffer (see layers.hpp).
#include <algorithm>
#include <utility>

#include "phalanx/core/error.hpp"
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

void Sequential::run_relu_after_max_pool() {
  for (std::size_t index = 0; index + 1 < layers_.size(); ++index) {
    const auto* pool = dynamic_cast<const Pooling*>(layers_[index + 1].get());
    if (layers_[index]->type() != "relu" || !pool || pool->type() != "max_pool") continue;
    std::swap(layers_[index], layers_[index + 1]);
    ++index;
  }
}

Shape Sequential::configure(const Shape& sample_input, ParameterRegistry& registry) {
  PHALANX_CHECK(!layers_.empty(), "empty sequential '", name(), "'");
  if (fusion_ == ActivationFusion::Fused) run_relu_after_max_pool();
  Shape shape = sample_input;
  sample_shapes_.clear();
  fused_into_previous_.assign(layers_.size(), false);
  for (std::size_t index = 0; index < layers_.size(); ++index) {
    auto& layer = layers_[index];
    shape = layer->configure(shape, registry);
    sample_shapes_.push_back(shape);
    first_parameter_offset_ = std::min(first_parameter_offset_, layer->first_parameter_offset());
    if (index > 0 && layers_[index - 1]->can_fuse_activation()) {
      const backend::FusedActivation activation =
          fusion_ == ActivationFusion::Fused ? layer->fused_form() : backend::FusedActivation::None;
      fused_into_previous_[index] = activation != backend::FusedActivation::None;
      layers_[index - 1]->set_fused_activation(activation);
    }
  }
  activations_.resize(layers_.size() - 1);
  gradients_.resize(2);
  return shape;
}

std::size_t Sequential::output_slot(std::size_t index) const {
  return index + 1 < layers_.size() && fused_into_previous_[index + 1] ? index + 1 : index;
}

int Sequential::fused_activation_count() const {
  int count = 0;
  for (const bool fused : fused_into_previous_) count += fused ? 1 : 0;
  return count;
}

std::size_t Sequential::activation_bytes() const {
  std::size_t bytes = 0;
  for (const auto& activation : activations_) bytes += activation.capacity_bytes();
  return bytes;
}

std::int64_t Sequential::sample_activation_elements() const {
  std::int64_t total = 0, largest = 0;
  for (std::size_t index = 0; index < sample_shapes_.size(); ++index) {
    const std::int64_t elements = sample_shapes_[index].elements();
    // A producer whose activation is fused writes into its buffer: one buffer for the two.
    if (index + 1 >= fused_into_previous_.size() || !fused_into_previous_[index + 1]) total += elements;
    largest = std::max(largest, elements);
    if (const auto* residual = dynamic_cast<const Residual*>(layers_[index].get()))
      total += residual->sample_activation_elements(elements);
    if (const auto* squeeze = dynamic_cast<const SqueezeExcitation*>(layers_[index].get()))
      total += squeeze->sample_activation_elements(elements);
    if (const auto* block = dynamic_cast<const InvertedResidual*>(layers_[index].get()))
      total += block->body().sample_activation_elements();
  }
  return total + 2 * largest;
}

void Sequential::forward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                         Tensor& output, const ForwardContext& context) {
  const std::int64_t batch = input.shape()[0];
  const Tensor* current = &input;
  for (std::size_t index = 0; index < layers_.size(); ++index) {
    // Its producer has written activation(x) into this layer's output already, and `current` is it.
    if (fused_into_previous_[index]) continue;
    const std::size_t slot = output_slot(index);
    Tensor* destination = &output;
    if (slot + 1 < layers_.size()) {
      activations_[slot].ensure(backend, sample_shapes_[slot].batched(batch));
      destination = &activations_[slot];
    }
    layers_[index]->forward(backend, registry, *current, *destination, context);
    current = destination;
  }
}

void Sequential::backward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                          const Tensor& output, const Tensor& grad_output, Tensor* grad_input,
                          const GradientsReady& gradients_ready) {
  const auto stored_output = [&](std::size_t index) -> const Tensor& {
    const std::size_t slot = output_slot(index);
    return slot + 1 == layers_.size() ? output : activations_[slot];
  };
  const Tensor* current_gradient = &grad_output;
  for (std::size_t reverse = layers_.size(); reverse-- > 0;) {
    const Tensor& layer_input = reverse == 0 ? input : stored_output(reverse - 1);
    const Tensor& layer_output = stored_output(reverse);
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
