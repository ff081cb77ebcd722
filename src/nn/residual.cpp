// Residual block: output = main(x) + shortcut(x), then ReLU (He et al. 2016). The shortcut's
// parameters are declared before the main path's so that, with backward running main first,
// "every gradient above offset X is final" stays true for GradSync. Stochastic depth draws which
// samples keep the main path from (seed, step, rank, layer) as dropout does, so resumes are exact.
#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/nn/layers.hpp"

namespace phalanx::nn {

Residual::Residual(std::string name, std::unique_ptr<Sequential> main, std::unique_ptr<Sequential> shortcut,
                   bool relu_after, ActivationFusion fusion, float stochastic_depth)
    : Layer(std::move(name)),
      main_(std::move(main)),
      shortcut_(std::move(shortcut)),
      relu_after_(relu_after),
      fusion_(fusion),
      stochastic_depth_(stochastic_depth) {
  PHALANX_REQUIRE_INPUT(stochastic_depth >= 0.0f && stochastic_depth < 1.0f, "layer '", this->name(),
                        "': stochastic_depth must be in [0, 1), got ", stochastic_depth);
}

std::int64_t Residual::sample_activation_elements(std::int64_t output_elements) const {
  return main_->sample_activation_elements() +
         (shortcut_ && !shortcut_->empty() ? shortcut_->sample_activation_elements() : 0) +
         (stochastic_depth_ > 0 ? 6 : 4) * output_elements;
}

Shape Residual::configure(const Shape& sample_input, ParameterRegistry& registry) {
  Shape shortcut_shape = sample_input;
  if (shortcut_ && !shortcut_->empty()) {
    shortcut_shape = shortcut_->configure(sample_input, registry);
    first_parameter_offset_ = std::min(first_parameter_offset_, shortcut_->first_parameter_offset());
  }
  const Shape main_shape = main_->configure(sample_input, registry);
  first_parameter_offset_ = std::min(first_parameter_offset_, main_->first_parameter_offset());
  PHALANX_REQUIRE_INPUT(main_shape == shortcut_shape, "layer '", name(), "': the main path gives ",
                        main_shape.to_string(), " but the shortcut gives ", shortcut_shape.to_string(),
                        "; add a shortcut (1x1 conv) that matches");
  return main_shape;
}

void Residual::forward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                       Tensor& output, const ForwardContext& context) {
  main_output_.ensure(backend, output.shape());
  main_->forward(backend, registry, input, main_output_, context);
  const Tensor* main_value = &main_output_;
  last_forward_dropped_paths_ = context.mode == Mode::Training && stochastic_depth_ > 0;
  if (last_forward_dropped_paths_) {
    // Sample n keeps its path when the n-th uniform of its stream reaches p: dropout's rule, with
    // one draw per sample instead of per element. A batch's draws are a few bytes: drawn here and
    // copied, so every backend applies the same choice.
    const std::int64_t batch = output.shape()[0];
    const std::uint64_t stream =
        mix_seed(mix_seed(static_cast<std::uint64_t>(context.step), context.rank), fnv1a_hash(name()));
    RandomStream draws(context.seed, stream);
    keep_drawn_.resize(static_cast<std::size_t>(batch));
    for (auto& keep : keep_drawn_) keep = draws.next_uniform() >= stochastic_depth_ ? 1 : 0;
    keep_.ensure(backend, Shape{batch}, DType::UInt8);
    backend.copy_from_host(keep_.data_as<std::uint8_t>(), keep_drawn_.data(), keep_drawn_.size());
    scaled_main_.ensure(backend, output.shape());
    backend.scale_samples(batch, output.elements() / batch, keep_.data_as<std::uint8_t>(),
                          1.0f / (1.0f - stochastic_depth_), main_output_.data(), scaled_main_.data());
    main_value = &scaled_main_;
  }
  const Tensor* shortcut_value = &input;
  if (shortcut_ && !shortcut_->empty()) {
    shortcut_output_.ensure(backend, output.shape());
    shortcut_->forward(backend, registry, input, shortcut_output_, context);
    shortcut_value = &shortcut_output_;
  }
  if (relu_after_ && fusion_ == ActivationFusion::Fused) {
    backend.add_relu(output.elements(), main_value->data(), shortcut_value->data(), output.data());
    return;
  }
  backend.add(output.elements(), main_value->data(), shortcut_value->data(), output.data());
  if (relu_after_) backend.relu_forward(output.elements(), output.data(), output.data());
}

void Residual::backward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                        const Tensor& output, const Tensor& grad_output, Tensor* grad_input,
                        const GradientsReady& gradients_ready) {
  const Tensor* grad_sum = &grad_output;
  if (relu_after_) {
    sum_gradient_.ensure(backend, output.shape());
    backend.relu_backward(output.elements(), output.data(), grad_output.data(), sum_gradient_.data());
    grad_sum = &sum_gradient_;
  }
  // The input gradient is the sum of both paths'; a caller that wants none (the first layer)
  // gets neither path's, which also spares their first layers the backward-data pass.
  const Tensor* grad_main = grad_sum;
  if (last_forward_dropped_paths_) {
    const std::int64_t batch = output.shape()[0];
    main_gradient_.ensure(backend, output.shape());
    backend.scale_samples(batch, output.elements() / batch, keep_.data_as<std::uint8_t>(),
                          1.0f / (1.0f - stochastic_depth_), grad_sum->data(), main_gradient_.data());
    grad_main = &main_gradient_;
  }
  main_->backward(backend, registry, input, main_output_, *grad_main, grad_input, gradients_ready);
  if (shortcut_ && !shortcut_->empty()) {
    Tensor* shortcut_destination = nullptr;
    if (grad_input) {
      path_gradient_.ensure(backend, input.shape());
      shortcut_destination = &path_gradient_;
    }
    shortcut_->backward(backend, registry, input, shortcut_output_, *grad_sum, shortcut_destination,
                        gradients_ready);
    if (grad_input) backend.accumulate(input.elements(), path_gradient_.data(), grad_input->data());
  } else if (grad_input) {
    backend.accumulate(input.elements(), grad_sum->data(), grad_input->data());
  }
}

}  // namespace phalanx::nn
