// CpuBackend: memory, copies and the forwarding of each op to its family (see cpu_backend.hpp),
// plus make_cpu_backend, the one entry point the rest of phalanx uses.
#include "cpu_backend.hpp"

#include <omp.h>

#include <cstdio>
#include <cstring>

#include "activation_element.hpp"
#include "augment.hpp"
#include "batch_mixing.hpp"
#include "bf16_support.hpp"
#include "channel_scale.hpp"
#include "depthwise_weight_gradient.hpp"
#include "elementwise.hpp"
#include "optimizers.hpp"
#include "phalanx/backend/arithmetic_rate.hpp"
#include "phalanx/core/error.hpp"
#include "resample.hpp"

namespace phalanx::backend {

std::unique_ptr<Backend> make_cpu_backend(int threads) {
  return std::make_unique<cpu::CpuBackend>(threads);
}

namespace cpu {

CpuBackend::CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_max_threads()) {
  // oneDNN (OpenMP runtime) and our loops both size their teams from this setting.
  if (threads > 0) omp_set_num_threads(threads);
}

void* CpuBackend::allocate(std::size_t bytes) {
  return HostAllocator::instance().allocate(bytes);
}

void CpuBackend::deallocate(void* pointer, std::size_t bytes) noexcept {
  HostAllocator::instance().deallocate(pointer, bytes);
}

std::string CpuBackend::name() const {
  const dnnl_version_t* version = dnnl_version();
  return detail::concat("cpu (oneDNN ", version->major, ".", version->minor, ".", version->patch, ", ",
                        threads_, threads_ == 1 ? " thread)" : " threads)");
}

void CpuBackend::synchronize() {
  context_.stream.wait();
}

void CpuBackend::set_compute_precision(ComputePrecision precision) {
  PHALANX_REQUIRE_INPUT(precision != ComputePrecision::Float16, name(),
                        " computes in fp32 or bf16; fp16 needs a GPU rank (the CUDA backend)");
  PHALANX_REQUIRE_INPUT(activations_ == ComputePrecision::Float32 || precision == activations_, name(),
                        ": activations held in bf16 need convolutions and linear layers computed in bf16 "
                        "(set the activations back to fp32 first)");
  // Where oneDNN has no bf16 kernels the ops compute in fp32; arithmetic_note says so.
  const ComputePrecision effective =
      precision == ComputePrecision::BFloat16 && bf16_support() == Bf16Support::Unavailable
          ? ComputePrecision::Float32
          : precision;
  convolutions_.set_precision(effective);
  linears_.set_precision(effective);
  precision_ = precision;
}

void CpuBackend::set_activation_precision(ComputePrecision precision) {
  const std::string refusal = activation_precision_refusal(precision, precision_);
  PHALANX_REQUIRE_INPUT(refusal.empty(), refusal);
  activations_ = precision;
  convolutions_.set_storage(precision);
  poolings_.set_storage(precision);
  linears_.set_storage(precision);
  batch_norms_.set_storage(precision);
  activation_ops_.set_storage(precision);
  cross_entropy_.set_storage(precision);
}

std::string CpuBackend::activation_precision_refusal(ComputePrecision activations,
                                                     ComputePrecision compute) const {
  if (activations == ComputePrecision::Float32) return {};
  if (activations == ComputePrecision::Float16)
    return name() + " holds activations in fp32 or bf16; fp16 activations need a GPU rank (the CUDA backend)";
  // As on GPU ranks: bf16 activations with fp32 arithmetic would convert at every convolution and
  // keep none of the savings.
  if (activations != compute)
    return name() +
           ": activations can be held in fp32 or in the compute precision of the convolutions and linear "
           "layers only (bf16 activations need train.precision: bf16)";
  // oneDNN's ISA (bf16_support), which ONEDNN_MAX_CPU_ISA can lower, not the CPU's flags: below
  // AVX-512 oneDNN has no bf16 convolution, pooling or inner product to read bf16 with
  // (bf16_support.hpp).
  if (bf16_support() == Bf16Support::Unavailable)
    return name() + ": bf16 activations need a CPU where oneDNN has bf16 kernels (AVX-512); " +
           bf16_support_note();
  return {};
}

std::string CpuBackend::arithmetic_note() const {
  if (precision_ != ComputePrecision::BFloat16) return {};
  return bf16_support_note();
}

PrecisionChoice CpuBackend::preferred_precision() const {
  switch (bf16_support()) {
    case Bf16Support::Amx: return {ComputePrecision::BFloat16, "AMX tiles"};
    case Bf16Support::Avx512Bf16: {
      // About 10 ms, once: the rate ratio is near 2 or near 0.5 on the CPUs measured, far from the
      // threshold, so run-to-run noise does not flip the choice.
      static const ArithmeticRates rates = measure_arithmetic_rates(1L << 18, 5);
      const double ratio = rates.fp32_fma > 0.0 ? rates.bf16_dot_product / rates.fp32_fma : 0.0;
      char text[96];
      std::snprintf(text, sizeof text, "bf16 dot products at %.2fx this core's fp32 FMA rate", ratio);
      return {ratio >= 1.0 ? ComputePrecision::BFloat16 : ComputePrecision::Float32, text};
    }
    case Bf16Support::Emulated:
      return {ComputePrecision::Float32, "no bf16 instructions: oneDNN would emulate bf16"};
    case Bf16Support::Unavailable: break;
  }
  return {ComputePrecision::Float32, "no oneDNN bf16 kernels below AVX-512"};
}

void CpuBackend::copy_from_host(void* device_destination, const void* host_source, std::size_t bytes) {
  if (bytes) std::memcpy(device_destination, host_source, bytes);
}

void CpuBackend::copy_to_host(void* host_destination, const void* device_source, std::size_t bytes) {
  if (bytes) std::memcpy(host_destination, device_source, bytes);
}

void CpuBackend::copy(void* device_destination, const void* device_source, std::size_t bytes) {
  // memmove: a copy onto an overlapping range (shifting a buffer) stays defined.
  if (bytes) std::memmove(device_destination, device_source, bytes);
}

void CpuBackend::fill(float* data, std::int64_t count, float value) {
  cpu::fill(data, count, value);
}

void CpuBackend::normalize_images(const std::uint8_t* images, std::int64_t pixels, int channels,
                                  const float* mean, const float* standard_deviation, float* output) {
  if (bf16_activations())
    cpu::normalize_images(images, pixels, channels, mean, standard_deviation, as_bf16(output));
  else
    cpu::normalize_images(images, pixels, channels, mean, standard_deviation, output);
}

void CpuBackend::augment_normalize_images(const AugmentGeometry& geometry, const std::uint8_t* images,
                                          const std::int32_t* draws, const float* mean,
                                          const float* standard_deviation, float* output) {
  if (bf16_activations())
    cpu::augment_normalize_images(geometry, images, draws, mean, standard_deviation, as_bf16(output));
  else
    cpu::augment_normalize_images(geometry, images, draws, mean, standard_deviation, output);
}

void CpuBackend::resample_images(const ResampleGeometry& geometry, const std::uint8_t* images,
                                 const std::int32_t* windows, std::uint8_t* output) {
  cpu::resample_images(geometry, images, windows, output);
}

void CpuBackend::mix_batch(const MixGeometry& geometry, float* images, const std::int32_t* labels,
                           std::int32_t* partner_labels) {
  if (bf16_activations())
    cpu::mix_batch(geometry, as_bf16(images), labels, partner_labels);
  else
    cpu::mix_batch(geometry, images, labels, partner_labels);
}

void CpuBackend::convolution_forward(const ConvolutionGeometry& geometry, const float* input,
                                     const float* weight, const float* bias, float* output) {
  convolutions_.forward(geometry, input, weight, bias, output);
}

void CpuBackend::convolution_backward_data(const ConvolutionGeometry& geometry, const float* grad_output,
                                           const float* weight, float* grad_input) {
  convolutions_.backward_data(geometry, grad_output, weight, grad_input);
}

void CpuBackend::convolution_backward_weights(const ConvolutionGeometry& geometry, const float* input,
                                              const float* grad_output, float* grad_weight,
                                              float* grad_bias) {
  if (own_depthwise_weight_gradient(geometry))
    depthwise_weight_gradient(geometry, input, grad_output, grad_weight, grad_bias, depthwise_partial_sums_);
  else
    convolutions_.backward_weights(geometry, input, grad_output, grad_weight, grad_bias);
}

void CpuBackend::convolution_backward(const ConvolutionGeometry& geometry, const float* input,
                                      const float* grad_output, const float* weight, float* grad_input,
                                      float* grad_weight, float* grad_bias) {
  if (!own_depthwise_weight_gradient(geometry)) {
    convolutions_.backward(geometry, input, grad_output, weight, grad_input, grad_weight, grad_bias);
    return;
  }
  depthwise_weight_gradient(geometry, input, grad_output, grad_weight, grad_bias, depthwise_partial_sums_);
  if (grad_input) convolutions_.backward_data(geometry, grad_output, weight, grad_input);
}

bool CpuBackend::own_depthwise_weight_gradient(const ConvolutionGeometry& geometry) {
  // fp32 only: under bf16 compute the gradient is oneDNN's of bf16 operands, as torch.autocast's.
  if (!is_depthwise(geometry) || precision_ != ComputePrecision::Float32 ||
      activations_ != ComputePrecision::Float32)
    return false;
  // oneDNN's depthwise kernel for this direction ("jit_dw") beats the own loop on the larger maps
  // (bench/depthwise_weight_gradient.cpp); the shapes it does not take (maps of 2x2 and below, 5x5
  // kernels) fall to its generic direct kernel, about 10x slower than the own loop. Asked once per shape.
  const auto known = own_depthwise_choice_.find(geometry);
  if (known != own_depthwise_choice_.end()) return known->second;
  const bool own = convolutions_.backward_weights_implementation(geometry).find("_dw") == std::string::npos;
  own_depthwise_choice_.emplace(geometry, own);
  return own;
}

std::size_t CpuBackend::pooling_workspace_bytes(const PoolingGeometry& geometry) {
  return poolings_.workspace_bytes(geometry);
}

void CpuBackend::pooling_forward(const PoolingGeometry& geometry, const float* input, float* output,
                                 void* workspace) {
  poolings_.forward(geometry, input, output, workspace);
}

void CpuBackend::pooling_backward(const PoolingGeometry& geometry, const float* grad_output,
                                  const void* workspace, float* grad_input) {
  poolings_.backward(geometry, grad_output, workspace, grad_input);
}

void CpuBackend::batch_norm_forward_training(const BatchNormGeometry& geometry, const float* input,
                                             const float* gamma, const float* beta, float* output,
                                             float* running_mean, float* running_variance, float momentum,
                                             float* saved_mean, float* saved_inverse_std) {
  batch_norms_.forward_training(geometry, input, gamma, beta, output, running_mean, running_variance,
                                momentum, saved_mean, saved_inverse_std);
  finish_batch_norm_activation(geometry, output);
}

void CpuBackend::batch_norm_forward_inference(const BatchNormGeometry& geometry, const float* input,
                                              const float* gamma, const float* beta,
                                              const float* running_mean, const float* running_variance,
                                              float* output) {
  batch_norms_.forward_inference(geometry, input, gamma, beta, running_mean, running_variance, output);
  finish_batch_norm_activation(geometry, output);
}

// The batch norm loops apply a fused ReLU as they write. The other fused activations run after
// them as the eltwise primitive the separate layer runs, in place over the output, so the results
// are that layer's bit for bit (a formula of their own inside the loops would round differently
// from oneDNN's exp). Their pass over memory remains; the fusion saves the activation buffer.
void CpuBackend::finish_batch_norm_activation(const BatchNormGeometry& geometry, float* output) {
  if (geometry.activation == FusedActivation::None || geometry.activation == FusedActivation::Relu) return;
  const std::int64_t count = std::int64_t{geometry.batch} * geometry.spatial * geometry.channels;
  activation_ops_.forward(activation_kind(geometry.activation), count, output, output);
}

void CpuBackend::batch_norm_backward(const BatchNormGeometry& geometry, const float* input,
                                     const float* grad_output, const float* gamma, const float* saved_mean,
                                     const float* saved_inverse_std, float* grad_input, float* grad_gamma,
                                     float* grad_beta) {
  batch_norms_.backward(geometry, input, grad_output, gamma, saved_mean, saved_inverse_std, grad_input,
                        grad_gamma, grad_beta);
}

void CpuBackend::relu_forward(std::int64_t count, const float* input, float* output) {
  if (bf16_activations())
    cpu::relu_forward(count, as_bf16(input), as_bf16(output));
  else
    cpu::relu_forward(count, input, output);
}

void CpuBackend::relu_backward(std::int64_t count, const float* output, const float* grad_output,
                               float* grad_input) {
  if (bf16_activations())
    cpu::relu_backward(count, as_bf16(output), as_bf16(grad_output), as_bf16(grad_input));
  else
    cpu::relu_backward(count, output, grad_output, grad_input);
}

void CpuBackend::activation_forward(ActivationKind kind, std::int64_t count, const float* input,
                                    float* output) {
  activation_ops_.forward(kind, count, input, output);
}

void CpuBackend::activation_backward(ActivationKind kind, std::int64_t count, const float* input,
                                     const float* output, const float* grad_output, float* grad_input) {
  activation_ops_.backward(kind, count, input, output, grad_output, grad_input);
}

void CpuBackend::add(std::int64_t count, const float* a, const float* b, float* output) {
  if (bf16_activations())
    cpu::add(count, as_bf16(a), as_bf16(b), as_bf16(output));
  else
    cpu::add(count, a, b, output);
}

void CpuBackend::add_relu(std::int64_t count, const float* a, const float* b, float* output) {
  if (bf16_activations())
    cpu::add_relu(count, as_bf16(a), as_bf16(b), as_bf16(output));
  else
    cpu::add_relu(count, a, b, output);
}

void CpuBackend::accumulate(std::int64_t count, const float* source, float* destination) {
  if (bf16_activations())
    cpu::accumulate(count, as_bf16(source), as_bf16(destination));
  else
    cpu::accumulate(count, source, destination);
}

void CpuBackend::scale(std::int64_t count, float factor, float* data) {
  cpu::scale(count, factor, data);
}

bool CpuBackend::all_finite(std::int64_t count, const float* data) {
  return cpu::all_finite(count, data);
}

double CpuBackend::sum_of_squares(std::int64_t count, const float* data) {
  return cpu::sum_of_squares(count, data);
}

void CpuBackend::moving_average(std::int64_t count, float decay, const float* source, float* average) {
  cpu::moving_average(count, decay, source, average);
}

void CpuBackend::dropout_forward(std::int64_t count, float probability, std::uint64_t seed,
                                 std::uint64_t stream, const float* input, float* output,
                                 std::uint8_t* mask) {
  if (bf16_activations())
    cpu::dropout_forward(count, probability, seed, stream, as_bf16(input), as_bf16(output), mask);
  else
    cpu::dropout_forward(count, probability, seed, stream, input, output, mask);
}

void CpuBackend::dropout_backward(std::int64_t count, float probability, const std::uint8_t* mask,
                                  const float* grad_output, float* grad_input) {
  if (bf16_activations())
    cpu::dropout_backward(count, probability, mask, as_bf16(grad_output), as_bf16(grad_input));
  else
    cpu::dropout_backward(count, probability, mask, grad_output, grad_input);
}

void CpuBackend::transpose_samples(std::int64_t batch, std::int64_t rows, std::int64_t columns,
                                   const float* input, float* output) {
  if (bf16_activations())
    cpu::transpose_samples(batch, rows, columns, as_bf16(input), as_bf16(output));
  else
    cpu::transpose_samples(batch, rows, columns, input, output);
}

void CpuBackend::linear_forward(const LinearGeometry& geometry, const float* input, const float* weight,
                                const float* bias, float* output) {
  linears_.forward(geometry, input, weight, bias, output);
}

void CpuBackend::linear_backward(const LinearGeometry& geometry, const float* input, const float* weight,
                                 const float* grad_output, float* grad_input, float* grad_weight,
                                 float* grad_bias) {
  linears_.backward(geometry, input, grad_output, weight, grad_input, grad_weight, grad_bias);
}

LossTotals CpuBackend::softmax_cross_entropy(int batch, int classes, const float* logits,
                                             const std::int32_t* labels, float label_smoothing,
                                             float gradient_scale, float* grad_logits, const LabelMix& mix) {
  return cross_entropy_.softmax_cross_entropy(batch, classes, logits, labels, label_smoothing, gradient_scale,
                                              grad_logits, mix);
}

void CpuBackend::predict(int batch, int classes, const float* logits, std::int32_t* predicted_class,
                         float* probabilities) {
  cross_entropy_.predict(batch, classes, logits, predicted_class, probabilities);
}

void CpuBackend::sgd_step(std::int64_t count, const SgdHyperparameters& hyperparameters, float* parameters,
                          const float* gradients, float* momentum_buffer) {
  cpu::sgd_step(count, hyperparameters, parameters, gradients, momentum_buffer);
}

void CpuBackend::adamw_step(std::int64_t count, const AdamWHyperparameters& hyperparameters,
                            float* parameters, const float* gradients, float* first_moment,
                            float* second_moment) {
  cpu::adamw_step(count, hyperparameters, parameters, gradients, first_moment, second_moment);
}

void CpuBackend::channel_scale_forward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                                       const float* input, const float* scale, float* output) {
  if (bf16_activations())
    cpu::channel_scale_forward(batch, spatial, channels, as_bf16(input), as_bf16(scale), as_bf16(output));
  else
    cpu::channel_scale_forward(batch, spatial, channels, input, scale, output);
}

void CpuBackend::channel_scale_backward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                                        const float* input, const float* scale, const float* grad_output,
                                        float* grad_input, float* grad_scale) {
  if (bf16_activations())
    cpu::channel_scale_backward(batch, spatial, channels, as_bf16(input), as_bf16(scale),
                                as_bf16(grad_output), grad_input ? as_bf16(grad_input) : nullptr,
                                as_bf16(grad_scale));
  else
    cpu::channel_scale_backward(batch, spatial, channels, input, scale, grad_output, grad_input, grad_scale);
}

void CpuBackend::scale_samples(std::int64_t batch, std::int64_t sample_elements, const std::uint8_t* keep,
                               float keep_scale, const float* input, float* output) {
  if (bf16_activations())
    cpu::scale_samples(batch, sample_elements, keep, keep_scale, as_bf16(input), as_bf16(output));
  else
    cpu::scale_samples(batch, sample_elements, keep, keep_scale, input, output);
}

}  // namespace cpu
}  // namespace phalanx::backend
