// CpuBackend: the Backend of CPU ranks. It owns host memory and one instance of each op family
// (oneDNN-backed convolution, pooling, linear; OpenMP loops for the rest) and forwards to them.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "activations.hpp"
#include "batch_norm.hpp"
#include "convolution.hpp"
#include "dnnl_context.hpp"
#include "linear.hpp"
#include "loss.hpp"
#include "phalanx/backend/backend.hpp"
#include "pooling.hpp"
#include "primitive_cache.hpp"

namespace phalanx::backend::cpu {

// Not thread-safe: one backend serves one training thread (its caches and scratch are unguarded).
class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads);

  // ---- Allocator ----
  void* allocate(std::size_t bytes) override;
  void deallocate(void* pointer, std::size_t bytes) noexcept override;
  DeviceKind device_kind() const override { return DeviceKind::Cpu; }

  std::string name() const override;
  void synchronize() override;
  // fp32 or bf16 (bf16 operands and fp32 accumulation in convolutions and linear layers, on AMX or
  // AVX-512 bf16 instructions where the CPU has them, emulated by oneDNN on other AVX-512 CPUs,
  // fp32 below AVX-512 where oneDNN has no bf16 kernels); fp16 is refused.
  void set_compute_precision(ComputePrecision precision) override;
  // fp32 or bf16 (train.activation_dtype): bf16 needs bf16 compute and a CPU where oneDNN has bf16
  // kernels (AVX-512, native or emulated); fp16 is refused.
  void set_activation_precision(ComputePrecision precision) override;
  std::string activation_precision_refusal(ComputePrecision activations,
                                           ComputePrecision compute) const override;
  std::string arithmetic_note() const override;
  // bf16 on AMX tiles; on AVX512-BF16 where the core's bf16 dot products are at least as fast as
  // its fp32 FMAs (backend::measure_arithmetic_rates, once per process); fp32 where bf16 would be
  // emulated or is unavailable.
  PrecisionChoice preferred_precision() const override;

  void copy_from_host(void* device_destination, const void* host_source, std::size_t bytes) override;
  void copy_to_host(void* host_destination, const void* device_source, std::size_t bytes) override;
  void copy(void* device_destination, const void* device_source, std::size_t bytes) override;
  void fill(float* data, std::int64_t count, float value) override;

  void normalize_images(const std::uint8_t* images, std::int64_t pixels, int channels, const float* mean,
                        const float* standard_deviation, float* output) override;
  void augment_normalize_images(const AugmentGeometry& geometry, const std::uint8_t* images,
                                const std::int32_t* draws, const float* mean, const float* standard_deviation,
                                float* output) override;
  void resample_images(const ResampleGeometry& geometry, const std::uint8_t* images, const std::int32_t* windows,
                       std::uint8_t* output) override;
  void mix_batch(const MixGeometry& geometry, float* images, const std::int32_t* labels,
                 std::int32_t* partner_labels) override;

  void convolution_forward(const ConvolutionGeometry& geometry, const float* input, const float* weight,
                           const float* bias, float* output) override;
  void convolution_backward_data(const ConvolutionGeometry& geometry, const float* grad_output,
                                 const float* weight, float* grad_input) override;
  void convolution_backward_weights(const ConvolutionGeometry& geometry, const float* input,
                                    const float* grad_output, float* grad_weight, float* grad_bias) override;
  // bf16 converts grad_output once for both directions.
  void convolution_backward(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                            const float* weight, float* grad_input, float* grad_weight,
                            float* grad_bias) override;

  std::size_t pooling_workspace_bytes(const PoolingGeometry& geometry) override;
  void pooling_forward(const PoolingGeometry& geometry, const float* input, float* output,
                       void* workspace) override;
  void pooling_backward(const PoolingGeometry& geometry, const float* grad_output, const void* workspace,
                        float* grad_input) override;

  void batch_norm_forward_training(const BatchNormGeometry& geometry, const float* input, const float* gamma,
                                   const float* beta, float* output, float* running_mean,
                                   float* running_variance, float momentum, float* saved_mean,
                                   float* saved_inverse_std) override;
  void batch_norm_forward_inference(const BatchNormGeometry& geometry, const float* input, const float* gamma,
                                    const float* beta, const float* running_mean,
                                    const float* running_variance, float* output) override;
  void batch_norm_backward(const BatchNormGeometry& geometry, const float* input, const float* grad_output,
                           const float* gamma, const float* saved_mean, const float* saved_inverse_std,
                           float* grad_input, float* grad_gamma, float* grad_beta) override;

  void relu_forward(std::int64_t count, const float* input, float* output) override;
  void relu_backward(std::int64_t count, const float* output, const float* grad_output,
                     float* grad_input) override;
  void activation_forward(ActivationKind kind, std::int64_t count, const float* input,
                          float* output) override;
  void activation_backward(ActivationKind kind, std::int64_t count, const float* input, const float* output,
                           const float* grad_output, float* grad_input) override;
  void add(std::int64_t count, const float* a, const float* b, float* output) override;
  void add_relu(std::int64_t count, const float* a, const float* b, float* output) override;
  void accumulate(std::int64_t count, const float* source, float* destination) override;
  void scale(std::int64_t count, float factor, float* data) override;
  bool all_finite(std::int64_t count, const float* data) override;
  double sum_of_squares(std::int64_t count, const float* data) override;
  void moving_average(std::int64_t count, float decay, const float* source, float* average) override;
  void dropout_forward(std::int64_t count, float probability, std::uint64_t seed, std::uint64_t stream,
                       const float* input, float* output, std::uint8_t* mask) override;
  void channel_scale_forward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                             const float* input, const float* scale, float* output) override;
  void channel_scale_backward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                              const float* input, const float* scale, const float* grad_output,
                              float* grad_input, float* grad_scale) override;
  void scale_samples(std::int64_t batch, std::int64_t sample_elements, const std::uint8_t* keep,
                     float keep_scale, const float* input, float* output) override;
  // Tiled and parallel instead of the base class's plain loop.
  void transpose_samples(std::int64_t batch, std::int64_t rows, std::int64_t columns, const float* input,
                         float* output) override;
  void dropout_backward(std::int64_t count, float probability, const std::uint8_t* mask,
                        const float* grad_output, float* grad_input) override;

  void linear_forward(const LinearGeometry& geometry, const float* input, const float* weight,
                      const float* bias, float* output) override;
  void linear_backward(const LinearGeometry& geometry, const float* input, const float* weight,
                       const float* grad_output, float* grad_input, float* grad_weight,
                       float* grad_bias) override;

  LossTotals softmax_cross_entropy(int batch, int classes, const float* logits, const std::int32_t* labels,
                                   float label_smoothing, float gradient_scale, float* grad_logits,
                                   const LabelMix& mix = {}) override;
  void predict(int batch, int classes, const float* logits, std::int32_t* predicted_class,
               float* probabilities) override;

  void sgd_step(std::int64_t count, const SgdHyperparameters& hyperparameters, float* parameters,
                const float* gradients, float* momentum_buffer) override;
  void adamw_step(std::int64_t count, const AdamWHyperparameters& hyperparameters, float* parameters,
                  const float* gradients, float* first_moment, float* second_moment) override;

 private:
  int threads_;  // the OpenMP team size set (or found) at construction
  ComputePrecision precision_ = ComputePrecision::Float32;  // as asked (see arithmetic_note)
  ComputePrecision activations_ = ComputePrecision::Float32;
  bool bf16_activations() const { return activations_ == ComputePrecision::BFloat16; }
  // Depthwise weight gradients in fp32 run the backend's own loop (depthwise_weight_gradient.hpp).
  bool own_depthwise_weight_gradient(const ConvolutionGeometry& geometry);
  std::unordered_map<ConvolutionGeometry, bool, GeometryHash> own_depthwise_choice_;
  std::vector<float> depthwise_partial_sums_;  // its workspace, kept between steps
  // A fused activation other than ReLU, after batch norm forward (see cpu_backend.cpp).
  void finish_batch_norm_activation(const BatchNormGeometry& geometry, float* output);
  DnnlContext context_;
  // Before the families that fall back to it where oneDNN fuses no activation.
  Activations activation_ops_{context_};
  Convolutions convolutions_{context_, activation_ops_};
  Poolings poolings_{context_};
  Linears linears_{context_, activation_ops_};
  BatchNorms batch_norms_;
  CrossEntropy cross_entropy_;
};

}  // namespace phalanx::backend::cpu
