// Batch normalisation on cuDNN (CUDNN_BATCHNORM_SPATIAL over NHWC activations, one statistic per
// channel), the implementation PyTorch itself calls on GPUs for fp32, so running statistics follow
// PyTorch: exponentialAverageFactor = momentum, unbiased variance in the running estimate, and
// cuDNN's saved "inverse variance" is 1/sqrt(var + eps), what the Backend interface saves.
// Activations held in bf16/fp16 go to own kernels with the same semantics (ReducedBatchNorm), as
// PyTorch runs reduced-precision batch norm in its own kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <unordered_map>

#include "batch_norm_kernels.hpp"
#include "cuda_handles.hpp"
#include "device_buffer.hpp"
#include "geometry_hash.hpp"

namespace phalanx::backend::cuda {

class BatchNorms {
 public:
  BatchNorms(cudnnHandle_t cudnn, cudaStream_t stream);
  ~BatchNorms();

  // The type activations are held in (Backend::set_activation_precision).
  void set_storage(ComputePrecision storage) { storage_ = storage; }

  void forward_training(const BatchNormGeometry& geometry, const float* input, const float* gamma,
                        const float* beta, float* output, float* running_mean, float* running_variance,
                        float momentum, float* saved_mean, float* saved_inverse_std);
  void forward_inference(const BatchNormGeometry& geometry, const float* input, const float* gamma,
                         const float* beta, const float* running_mean, const float* running_variance,
                         float* output);
  void backward(const BatchNormGeometry& geometry, const float* input, const float* grad_output,
                const float* gamma, const float* saved_mean, const float* saved_inverse_std,
                float* grad_input, float* grad_gamma, float* grad_beta);

 private:
  struct Plan;
  Plan& plan(const BatchNormGeometry& geometry);
  // Where cuDNN should write a result that may alias one of its inputs: `destination` itself, or
  // scratch that finish_output then copies to it (cuDNN does not promise in-place operation).
  float* output_target(const BatchNormGeometry& geometry, float* destination, bool aliases_an_input);
  void finish_output(const BatchNormGeometry& geometry, float* destination, const float* written);

  cudnnHandle_t cudnn_;
  cudaStream_t stream_;
  ComputePrecision storage_ = ComputePrecision::Float32;
  ReducedBatchNorm reduced_;  // bf16/fp16 activations
  DeviceBuffer scratch_;
  std::unordered_map<BatchNormGeometry, std::unique_ptr<Plan>, GeometryHash> plans_;
};

}  // namespace phalanx::backend::cuda
