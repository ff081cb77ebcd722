// Host-memory default for the ops a device backend must override (the CPU backend inherits them).
#include "phalanx/backend/backend.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::backend {

ComputePrecision compute_precision_from_name(const std::string& name) {
  if (name == "fp32") return ComputePrecision::Float32;
  if (name == "bf16") return ComputePrecision::BFloat16;
  if (name == "fp16") return ComputePrecision::Float16;
  throw_internal_error(detail::concat("unknown compute precision '", name, "'"), __FILE__, __LINE__);
}

std::string compute_precision_name(ComputePrecision precision) {
  switch (precision) {
    case ComputePrecision::BFloat16: return "bf16";
    case ComputePrecision::Float16: return "fp16";
    case ComputePrecision::Float32: break;
  }
  return "fp32";
}

void Backend::set_compute_precision(ComputePrecision precision) {
  PHALANX_REQUIRE_INPUT(precision == ComputePrecision::Float32, name(),
                        " computes in fp32 only; bf16 and fp16 need a GPU rank (the CUDA backend)");
}

void Backend::set_activation_precision(ComputePrecision precision) {
  const std::string refusal = activation_precision_refusal(precision, ComputePrecision::Float32);
  PHALANX_REQUIRE_INPUT(refusal.empty(), refusal);
}

std::string Backend::activation_precision_refusal(ComputePrecision activations, ComputePrecision) const {
  if (activations == ComputePrecision::Float32) return {};
  return name() +
         " keeps activations in fp32 only; bf16 and fp16 activations need a GPU rank (the CUDA "
         "backend)";
}

void Backend::convolution_backward(const ConvolutionGeometry& geometry, const float* input,
                                   const float* grad_output, const float* weight, float* grad_input,
                                   float* grad_weight, float* grad_bias) {
  convolution_backward_weights(geometry, input, grad_output, grad_weight, grad_bias);
  if (grad_input) convolution_backward_data(geometry, grad_output, weight, grad_input);
}

void Backend::transpose_samples(std::int64_t batch, std::int64_t rows, std::int64_t columns,
                                const float* input, float* output) {
  PHALANX_CHECK(device_kind() == DeviceKind::Cpu, name(), " must override transpose_samples");
  for (std::int64_t sample = 0; sample < batch; ++sample) {
    const float* in = input + sample * rows * columns;
    float* out = output + sample * rows * columns;
    for (std::int64_t row = 0; row < rows; ++row)
      for (std::int64_t column = 0; column < columns; ++column)
        out[column * rows + row] = in[row * columns + column];
  }
}

void Backend::add_relu(std::int64_t count, const float* a, const float* b, float* output) {
  add(count, a, b, output);
  relu_forward(count, output, output);
}

void Backend::softmax_cross_entropy_deferred(int batch, int classes, const float* logits,
                                             const std::int32_t* labels, float label_smoothing,
                                             float gradient_scale, float* grad_logits, const LabelMix& mix) {
  deferred_loss_totals_.push_back(softmax_cross_entropy(batch, classes, logits, labels, label_smoothing,
                                                        gradient_scale, grad_logits, mix));
}

std::vector<LossTotals> Backend::take_deferred_loss_totals() {
  std::vector<LossTotals> totals;
  totals.swap(deferred_loss_totals_);
  return totals;
}

}  // namespace phalanx::backend
