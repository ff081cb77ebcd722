// Batch normalisation (see batch_norm.hpp): cuDNN for fp32 activations, own kernels for bf16/fp16
// ones (batch_norm_kernels.cu). The activations [batch, spatial, channels] are described to cuDNN
// as an NHWC tensor of N = batch, C = channels, H = spatial, W = 1, which is the same memory
// whether spatial came from an image (H * W) or is 1 after a linear layer.
#include "batch_norm.hpp"

#include "elementwise.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend::cuda {

namespace {

constexpr cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL;

std::size_t activation_bytes(const BatchNormGeometry& geometry) {
  return sizeof(float) * static_cast<std::size_t>(geometry.batch) * geometry.spatial * geometry.channels;
}

}  // namespace

struct BatchNorms::Plan {
  explicit Plan(const BatchNormGeometry& geometry) {
    PHALANX_CUDNN(cudnnSetTensor4dDescriptor(activations.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT,
                                             geometry.batch, geometry.channels, geometry.spatial, 1));
    PHALANX_CUDNN(cudnnDeriveBNTensorDescriptor(parameters.get(), activations.get(), mode));
  }
  TensorDescriptor activations;
  TensorDescriptor parameters;  // 1 x C x 1 x 1: gamma, beta, means, variances
};

BatchNorms::BatchNorms(cudnnHandle_t cudnn, cudaStream_t stream) : cudnn_(cudnn), stream_(stream) {}

BatchNorms::~BatchNorms() = default;

BatchNorms::Plan& BatchNorms::plan(const BatchNormGeometry& geometry) {
  BatchNormGeometry shape = geometry;  // the descriptors do not depend on the fused activation
  shape.activation = FusedActivation::None;
  auto found = plans_.find(shape);
  if (found == plans_.end()) found = plans_.emplace(shape, std::make_unique<Plan>(shape)).first;
  return *found->second;
}

float* BatchNorms::output_target(const BatchNormGeometry& geometry, float* destination,
                                 bool aliases_an_input) {
  if (!aliases_an_input) return destination;
  scratch_.ensure(activation_bytes(geometry));
  return scratch_.as<float>();
}

void BatchNorms::finish_output(const BatchNormGeometry& geometry, float* destination, const float* written) {
  // cuDNN fuses an activation into batch norm only for fp16 NHWC data in its persistent mode
  // (cudnnBatchNormalizationForwardTrainingEx, CUDNN_BATCHNORM_OPS_BN_ACTIVATION), whose sums
  // would differ from the plain mode's; these activations are fp32. So the activation follows cuDNN:
  // in place, or as the copy out of the scratch an aliasing call wrote to (one pass either way).
  const std::int64_t count = static_cast<std::int64_t>(geometry.batch) * geometry.spatial * geometry.channels;
  if (geometry.activation == FusedActivation::Relu) {
    launch_relu_forward(stream_, ComputePrecision::Float32, count, written, destination);
    return;
  }
  if (geometry.activation != FusedActivation::None) {
    launch_activation_forward(stream_, ComputePrecision::Float32, activation_kind(geometry.activation), count,
                              written, destination);
    return;
  }
  if (written != destination)
    PHALANX_CUDA(
        cudaMemcpyAsync(destination, written, activation_bytes(geometry), cudaMemcpyDeviceToDevice, stream_));
}

void BatchNorms::forward_training(const BatchNormGeometry& geometry, const float* input, const float* gamma,
                                  const float* beta, float* output, float* running_mean,
                                  float* running_variance, float momentum, float* saved_mean,
                                  float* saved_inverse_std) {
  const std::int64_t values_per_channel = static_cast<std::int64_t>(geometry.batch) * geometry.spatial;
  PHALANX_CHECK(values_per_channel > 1, "batch norm in training needs more than one value per channel, got ",
                values_per_channel);
  if (storage_ != ComputePrecision::Float32) {
    reduced_.forward_training(stream_, storage_, geometry, input, gamma, beta, output, running_mean,
                              running_variance, momentum, saved_mean, saved_inverse_std);
    return;
  }
  Plan& plan = this->plan(geometry);
  float* target = output_target(geometry, output, output == input);
  const float one = 1.0f, zero = 0.0f;
  PHALANX_CUDNN(cudnnBatchNormalizationForwardTraining(
      cudnn_, mode, &one, &zero, plan.activations.get(), input, plan.activations.get(), target,
      plan.parameters.get(), gamma, beta, static_cast<double>(momentum), running_mean, running_variance,
      static_cast<double>(geometry.epsilon), saved_mean, saved_inverse_std));
  finish_output(geometry, output, target);
}

void BatchNorms::forward_inference(const BatchNormGeometry& geometry, const float* input, const float* gamma,
                                   const float* beta, const float* running_mean,
                                   const float* running_variance, float* output) {
  if (storage_ != ComputePrecision::Float32) {
    reduced_.forward_inference(stream_, storage_, geometry, input, gamma, beta, running_mean,
                               running_variance, output);
    return;
  }
  Plan& plan = this->plan(geometry);
  float* target = output_target(geometry, output, output == input);
  const float one = 1.0f, zero = 0.0f;
  PHALANX_CUDNN(cudnnBatchNormalizationForwardInference(
      cudnn_, mode, &one, &zero, plan.activations.get(), input, plan.activations.get(), target,
      plan.parameters.get(), gamma, beta, running_mean, running_variance,
      static_cast<double>(geometry.epsilon)));
  finish_output(geometry, output, target);
}

void BatchNorms::backward(const BatchNormGeometry& geometry, const float* input, const float* grad_output,
                          const float* gamma, const float* saved_mean, const float* saved_inverse_std,
                          float* grad_input, float* grad_gamma, float* grad_beta) {
  if (storage_ != ComputePrecision::Float32) {
    reduced_.backward(stream_, storage_, geometry, input, grad_output, gamma, saved_mean, saved_inverse_std,
                      grad_input, grad_gamma, grad_beta);
    return;
  }
  Plan& plan = this->plan(geometry);
  float* target = output_target(geometry, grad_input, grad_input == grad_output || grad_input == input);
  const float one = 1.0f, zero = 0.0f;
  PHALANX_CUDNN(cudnnBatchNormalizationBackward(
      cudnn_, mode, &one, &zero, &one, &zero, plan.activations.get(), input, plan.activations.get(),
      grad_output, plan.activations.get(), target, plan.parameters.get(), gamma, grad_gamma, grad_beta,
      static_cast<double>(geometry.epsilon), saved_mean, saved_inverse_std));
  // The fused activation belongs to the forward only (its backward is the layer's): only the copy
  // out of the scratch, never an activation of the gradient.
  BatchNormGeometry plain = geometry;
  plain.activation = FusedActivation::None;
  finish_output(plain, grad_input, target);
}

}  // namespace phalanx::backend::cuda
