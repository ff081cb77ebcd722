// CudaBackend: the Backend of GPU ranks. It owns the device's stream and library handles, the op
// families (cuDNN convolution and batch norm, cuBLAS linear, own kernels for the rest) and
// forwards every Backend call to them on its one stream.
#pragma once

#include <string>

#include "batch_norm.hpp"
#include "convolution.hpp"
#include "cuda_handles.hpp"
#include "device_buffer.hpp"
#include "finite_check.hpp"
#include "linear.hpp"
#include "loss.hpp"
#include "phalanx/backend/backend.hpp"
#include "pinned_host_allocator.hpp"
#include "reduction.hpp"
#include "sum_of_squares.hpp"

namespace phalanx::backend::cuda {

// Not thread-safe: one backend serves one training thread (its caches and scratch are unguarded).
class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_.get(); }

  // ---- Allocator ----
  void* allocate(std::size_t bytes) override;
  void deallocate(void* pointer, std::size_t bytes) noexcept override;
  DeviceKind device_kind() const override { return DeviceKind::Cuda; }

  std::string name() const override { return name_; }
  void synchronize() override;
  Allocator& staging_allocator() override { return staging_allocator_; }
  void set_compute_precision(ComputePrecision precision) override;
  void set_activation_precision(ComputePrecision precision) override;
  std::string activation_precision_refusal(ComputePrecision activations,
                                           ComputePrecision compute) const override;
  void set_deterministic(bool deterministic) override { convolutions_.set_deterministic(deterministic); }
  std::optional<DeviceMemory> device_memory() override;
  std::optional<DeviceIdentity> device_identity() const override;
  std::unique_ptr<Upload> make_upload() override;
  std::unique_ptr<TimingMarker> make_timing_marker() override;
  std::unique_ptr<StagedCopy> make_staged_copy() override;

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
  void dropout_backward(std::int64_t count, float probability, const std::uint8_t* mask,
                        const float* grad_output, float* grad_input) override;
  void channel_scale_forward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                             const float* input, const float* scale, float* output) override;
  void channel_scale_backward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                              const float* input, const float* scale, const float* grad_output,
                              float* grad_input, float* grad_scale) override;
  void scale_samples(std::int64_t batch, std::int64_t sample_elements, const std::uint8_t* keep,
                     float keep_scale, const float* input, float* output) override;
  void transpose_samples(std::int64_t batch, std::int64_t rows, std::int64_t columns, const float* input,
                         float* output) override;

  void linear_forward(const LinearGeometry& geometry, const float* input, const float* weight,
                      const float* bias, float* output) override;
  void linear_backward(const LinearGeometry& geometry, const float* input, const float* weight,
                       const float* grad_output, float* grad_input, float* grad_weight,
                       float* grad_bias) override;

  LossTotals softmax_cross_entropy(int batch, int classes, const float* logits, const std::int32_t* labels,
                                   float label_smoothing, float gradient_scale, float* grad_logits,
                                   const LabelMix& mix = {}) override;
  void softmax_cross_entropy_deferred(int batch, int classes, const float* logits, const std::int32_t* labels,
                                      float label_smoothing, float gradient_scale, float* grad_logits,
                                      const LabelMix& mix = {}) override;
  std::vector<LossTotals> take_deferred_loss_totals() override;
  void predict(int batch, int classes, const float* logits, std::int32_t* predicted_class,
               float* probabilities) override;

  void sgd_step(std::int64_t count, const SgdHyperparameters& hyperparameters, float* parameters,
                const float* gradients, float* momentum_buffer) override;
  void adamw_step(std::int64_t count, const AdamWHyperparameters& hyperparameters, float* parameters,
                  const float* gradients, float* first_moment, float* second_moment) override;

  // How often an op of this backend has made the host wait for its device (see cuda_host_waits).
  std::int64_t host_waits() const;

 private:
  // Makes this backend's device current on the calling thread (cheap when it already is).
  void make_current() const;

  int device_;  // first member: the constructor selects the device before any handle exists
  std::string name_;
  Stream stream_;
  Stream copy_stream_;     // input uploads (CudaUpload), beside the compute stream
  Stream staging_stream_;  // gradient buckets to the host (CudaStagedCopy), beside both
  CudnnHandle cudnn_;
  CublasHandle cublas_;
  ColumnSums column_sums_;
  Convolutions convolutions_;
  BatchNorms batch_norms_;
  Linears linears_;
  CrossEntropy cross_entropy_;
  DeviceBuffer copy_scratch_;  // bounce buffer for copies between overlapping ranges
  DeviceBuffer augment_scratch_;  // the images between the auto-augment ops of the input kernel
  PinnedHostAllocator staging_allocator_;
  FiniteCheck finite_check_;
  SumOfSquares sum_of_squares_;
  std::int64_t host_waits_ = 0;  // synchronize, copies back to the host, finite checks, frees
  ComputePrecision compute_precision_ = ComputePrecision::Float32;
  ComputePrecision activations_ = ComputePrecision::Float32;  // what activation buffers hold
};

}  // namespace phalanx::backend::cuda
