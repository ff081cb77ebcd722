// cuDNN batch normalisation (see batch_norm.hpp). The activations [batch, spatial, channels] are
// described to cuDNN as an NHWC tensor of N = batch, C = channels, H = spatial, W = 1, which is
// the same memory whether spatial came from an image (H * W) or is 1 after a linear layer.
#include "batch_norm.hpp"

#include "cudnn_refusal.hpp"
#include "elementwise.hpp"
#include "forward_epilogue.hpp"
#include "phalanx/core/error.hpp"
#include "precision_conversion.hpp"

namespace phalanx::backend::cuda {

namespace {

constexpr cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL;
// Training on bf16/fp16 activations: cuDNN's optimised NHWC path (the mode PyTorch takes for
// channels-last training), with the same statistics and saved values as the plain mode. fp32
// activations keep the plain mode, whose results the CPU parity tests pin down.
constexpr cudnnBatchNormMode_t persistent_mode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;

std::int64_t activation_count(const BatchNormGeometry& geometry) {
  return static_cast<std::int64_t>(geometry.batch) * geometry.spatial * geometry.channels;
}

cudnnDataType_t data_type(ComputePrecision precision) {
  switch (precision) {
    case ComputePrecision::BFloat16: return CUDNN_DATA_BFLOAT16;
    case ComputePrecision::Float16: return CUDNN_DATA_HALF;
    case ComputePrecision::Float32: break;
  }
  return CUDNN_DATA_FLOAT;
}

// Whether cuDNN refused a call for the data type or mode of the activations (the plain mode or the
// fp32 path then takes over; cudnn_refusal.hpp); any other failure is an error.
bool refused_for_type(cudnnStatus_t status) {
  return cudnn_refused(status);
}

}  // namespace

struct BatchNorms::Plan {
  Plan(const BatchNormGeometry& geometry, ComputePrecision held) {
    PHALANX_CUDNN(cudnnSetTensor4dDescriptor(activations.get(), CUDNN_TENSOR_NHWC, data_type(held),
                                             geometry.batch, geometry.channels, geometry.spatial, 1));
    if (held == ComputePrecision::Float32) {
      PHALANX_CUDNN(cudnnDeriveBNTensorDescriptor(parameters.get(), activations.get(), mode));
      return;
    }
    // Statistics and gamma/beta are fp32 buffers for every activation type, so their descriptor
    // says FLOAT outright, as PyTorch builds it from its fp32 weight: cuDNN documents the derived
    // descriptor as FLOAT for a HALF x only ("the same type as the input" otherwise), and a
    // BFLOAT16 one would make cuDNN read the fp32 gamma, beta, means and variances as bf16 pairs.
    PHALANX_CUDNN(cudnnSetTensor4dDescriptor(parameters.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                                             geometry.channels, 1, 1));
  }
  TensorDescriptor activations;
  TensorDescriptor parameters;  // 1 x C x 1 x 1: gamma, beta, means, variances
  // bf16/fp16 activations only: cuDNN refused the persistent mode for training at this shape (the
  // plain mode is used instead), or refused their type in every mode (every call of the shape then
  // widens its operands to fp32, runs there and rounds the result back).
  bool persistent_refused = false;
  bool in_float32 = false;
};

BatchNorms::BatchNorms(cudnnHandle_t cudnn, cudaStream_t stream) : cudnn_(cudnn), stream_(stream) {}

BatchNorms::~BatchNorms() = default;

BatchNorms::Plan& BatchNorms::plan(const BatchNormGeometry& geometry, ComputePrecision held) {
  BatchNormGeometry shape = geometry;  // the descriptors do not depend on the fused activation
  shape.activation = FusedActivation::None;
  auto& plans = plans_[static_cast<std::size_t>(held)];
  auto found = plans.find(shape);
  if (found == plans.end()) found = plans.emplace(shape, std::make_unique<Plan>(shape, held)).first;
  return *found->second;
}

float* BatchNorms::output_target(const BatchNormGeometry& geometry, float* destination,
                                 bool aliases_an_input) {
  if (!aliases_an_input) return destination;
  scratch_.ensure(element_bytes(storage_) * static_cast<std::size_t>(activation_count(geometry)));
  return scratch_.as<float>();
}

void BatchNorms::finish_output(const BatchNormGeometry& geometry, float* destination, const float* written) {
  // cuDNN fuses an activation into batch norm only in its persistent NHWC mode
  // (cudnnBatchNormalizationForwardTrainingEx, CUDNN_BATCHNORM_OPS_BN_ACTIVATION), whose sums would
  // differ from the plain mode's. So the ReLU follows cuDNN: in place, or as the copy out of the
  // scratch an aliasing call wrote to (one pass either way).
  if (geometry.activation == FusedActivation::Relu) {
    launch_relu_forward(stream_, storage_, activation_count(geometry), written, destination);
    return;
  }
  if (written != destination)
    PHALANX_CUDA(cudaMemcpyAsync(
        destination, written, element_bytes(storage_) * static_cast<std::size_t>(activation_count(geometry)),
        cudaMemcpyDeviceToDevice, stream_));
}

const float* BatchNorms::widened(const BatchNormGeometry& geometry, const float* values,
                                 DeviceBuffer& buffer) {
  const std::int64_t count = activation_count(geometry);
  buffer.ensure(sizeof(float) * static_cast<std::size_t>(count));
  launch_convert_to_float(stream_, storage_, values, buffer.as<float>(), count);
  return buffer.as<float>();
}

void BatchNorms::narrow_into(const BatchNormGeometry& geometry, const float* values,
                             FusedActivation activation, float* destination) {
  // Rounding and the fused ReLU in one pass (the forward epilogue with no bias).
  launch_forward_epilogue(stream_, ComputePrecision::Float32, values,
                          activation_count(geometry) / geometry.channels, geometry.channels, nullptr,
                          activation, storage_, destination);
}

void BatchNorms::forward_training(const BatchNormGeometry& geometry, const float* input, const float* gamma,
                                  const float* beta, float* output, float* running_mean,
                                  float* running_variance, float momentum, float* saved_mean,
                                  float* saved_inverse_std) {
  const std::int64_t values_per_channel = static_cast<std::int64_t>(geometry.batch) * geometry.spatial;
  PHALANX_CHECK(values_per_channel > 1, "batch norm in training needs more than one value per channel, got ",
                values_per_channel);
  const float one = 1.0f, zero = 0.0f;
  Plan& plan = this->plan(geometry, storage_);
  if (!plan.in_float32) {
    float* target = output_target(geometry, output, output == input);
    const auto run = [&](cudnnBatchNormMode_t run_mode) {
      return cudnnBatchNormalizationForwardTraining(
          cudnn_, run_mode, &one, &zero, plan.activations.get(), input, plan.activations.get(), target,
          plan.parameters.get(), gamma, beta, static_cast<double>(momentum), running_mean, running_variance,
          static_cast<double>(geometry.epsilon), saved_mean, saved_inverse_std);
    };
    cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;
    if (storage_ != ComputePrecision::Float32 && !plan.persistent_refused) {
      status = run(persistent_mode);
      // Refused before it touched anything: the running statistics are still this step's inputs.
      if (refused_for_type(status)) plan.persistent_refused = true;
    }
    if (storage_ == ComputePrecision::Float32 || plan.persistent_refused) status = run(mode);
    if (status == CUDNN_STATUS_SUCCESS) {
      finish_output(geometry, output, target);
      return;
    }
    if (storage_ == ComputePrecision::Float32 || !refused_for_type(status))
      throw_cudnn_error(status, "cudnnBatchNormalizationForwardTraining", __FILE__, __LINE__);
    plan.in_float32 = true;
  }
  Plan& wide = this->plan(geometry, ComputePrecision::Float32);
  const float* x = widened(geometry, input, wide_input_);
  wide_result_.ensure(sizeof(float) * static_cast<std::size_t>(activation_count(geometry)));
  PHALANX_CUDNN(cudnnBatchNormalizationForwardTraining(
      cudnn_, mode, &one, &zero, wide.activations.get(), x, wide.activations.get(), wide_result_.as<float>(),
      wide.parameters.get(), gamma, beta, static_cast<double>(momentum), running_mean, running_variance,
      static_cast<double>(geometry.epsilon), saved_mean, saved_inverse_std));
  narrow_into(geometry, wide_result_.as<float>(), geometry.activation, output);
}

void BatchNorms::forward_inference(const BatchNormGeometry& geometry, const float* input, const float* gamma,
                                   const float* beta, const float* running_mean,
                                   const float* running_variance, float* output) {
  const float one = 1.0f, zero = 0.0f;
  Plan& plan = this->plan(geometry, storage_);
  if (!plan.in_float32) {
    float* target = output_target(geometry, output, output == input);
    const cudnnStatus_t status = cudnnBatchNormalizationForwardInference(
        cudnn_, mode, &one, &zero, plan.activations.get(), input, plan.activations.get(), target,
        plan.parameters.get(), gamma, beta, running_mean, running_variance,
        static_cast<double>(geometry.epsilon));
    if (status == CUDNN_STATUS_SUCCESS) {
      finish_output(geometry, output, target);
      return;
    }
    if (storage_ == ComputePrecision::Float32 || !refused_for_type(status))
      throw_cudnn_error(status, "cudnnBatchNormalizationForwardInference", __FILE__, __LINE__);
    plan.in_float32 = true;
  }
  Plan& wide = this->plan(geometry, ComputePrecision::Float32);
  const float* x = widened(geometry, input, wide_input_);
  wide_result_.ensure(sizeof(float) * static_cast<std::size_t>(activation_count(geometry)));
  PHALANX_CUDNN(cudnnBatchNormalizationForwardInference(
      cudnn_, mode, &one, &zero, wide.activations.get(), x, wide.activations.get(), wide_result_.as<float>(),
      wide.parameters.get(), gamma, beta, running_mean, running_variance,
      static_cast<double>(geometry.epsilon)));
  narrow_into(geometry, wide_result_.as<float>(), geometry.activation, output);
}

void BatchNorms::backward(const BatchNormGeometry& geometry, const float* input, const float* grad_output,
                          const float* gamma, const float* saved_mean, const float* saved_inverse_std,
                          float* grad_input, float* grad_gamma, float* grad_beta) {
  const float one = 1.0f, zero = 0.0f;
  // The plain result: the fused ReLU belongs to the forward only (its backward is the layer's).
  BatchNormGeometry plain = geometry;
  plain.activation = FusedActivation::None;
  Plan& plan = this->plan(geometry, storage_);
  if (!plan.in_float32) {
    float* target = output_target(geometry, grad_input, grad_input == grad_output || grad_input == input);
    const auto run = [&](cudnnBatchNormMode_t run_mode) {
      return cudnnBatchNormalizationBackward(
          cudnn_, run_mode, &one, &zero, &one, &zero, plan.activations.get(), input, plan.activations.get(),
          grad_output, plan.activations.get(), target, plan.parameters.get(), gamma, grad_gamma, grad_beta,
          static_cast<double>(geometry.epsilon), saved_mean, saved_inverse_std);
    };
    cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;
    if (storage_ != ComputePrecision::Float32 && !plan.persistent_refused) {
      status = run(persistent_mode);
      if (refused_for_type(status)) plan.persistent_refused = true;
    }
    if (storage_ == ComputePrecision::Float32 || plan.persistent_refused) status = run(mode);
    if (status == CUDNN_STATUS_SUCCESS) {
      finish_output(plain, grad_input, target);
      return;
    }
    if (storage_ == ComputePrecision::Float32 || !refused_for_type(status))
      throw_cudnn_error(status, "cudnnBatchNormalizationBackward", __FILE__, __LINE__);
    plan.in_float32 = true;
  }
  Plan& wide = this->plan(geometry, ComputePrecision::Float32);
  const float* x = widened(geometry, input, wide_input_);
  const float* dy = widened(geometry, grad_output, wide_gradient_);
  wide_result_.ensure(sizeof(float) * static_cast<std::size_t>(activation_count(geometry)));
  PHALANX_CUDNN(cudnnBatchNormalizationBackward(
      cudnn_, mode, &one, &zero, &one, &zero, wide.activations.get(), x, wide.activations.get(), dy,
      wide.activations.get(), wide_result_.as<float>(), wide.parameters.get(), gamma, grad_gamma, grad_beta,
      static_cast<double>(geometry.epsilon), saved_mean, saved_inverse_std));
  narrow_into(geometry, wide_result_.as<float>(), FusedActivation::None, grad_input);
}

}  // namespace phalanx::backend::cuda
