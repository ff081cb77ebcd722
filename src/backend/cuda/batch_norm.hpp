// Batch normalisation on cuDNN (CUDNN_BATCHNORM_SPATIAL over NHWC activations, one statistic per
// channel), the implementation PyTorch itself calls on GPUs, so running statistics follow
// PyTorch: exponentialAverageFactor = momentum, unbiased variance in the running estimate, and
// cuDNN's saved "inverse variance" is 1/sqrt(var + eps), what the Backend interface saves.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <memory>
#include <unordered_map>

#include "cuda_handles.hpp"
#include "device_buffer.hpp"
#include "geometry_hash.hpp"
#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

class BatchNorms {
 public:
  BatchNorms(cudnnHandle_t cudnn, cudaStream_t stream);
  ~BatchNorms();

  // The type activations are held in (Backend::set_activation_precision). cuDNN reads and writes
  // bf16/fp16 activations itself, with fp32 statistics and gamma/beta; where it refuses their type
  // for a shape, that shape widens them to fp32 around each call instead (slower, never an error).
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
  Plan& plan(const BatchNormGeometry& geometry, ComputePrecision held);
  // Where cuDNN should write a result that may alias one of its inputs: `destination` itself, or
  // scratch that finish_output then copies to it (cuDNN does not promise in-place operation).
  float* output_target(const BatchNormGeometry& geometry, float* destination, bool aliases_an_input);
  void finish_output(const BatchNormGeometry& geometry, float* destination, const float* written);
  // The fp32 path of a shape whose bf16/fp16 type cuDNN refused: the stored values widened into
  // `buffer`, and an fp32 result rounded (with the fused ReLU of `activation`) into `destination`.
  const float* widened(const BatchNormGeometry& geometry, const float* values, DeviceBuffer& buffer);
  void narrow_into(const BatchNormGeometry& geometry, const float* values, FusedActivation activation,
                   float* destination);

  cudnnHandle_t cudnn_;
  cudaStream_t stream_;
  ComputePrecision storage_ = ComputePrecision::Float32;
  DeviceBuffer scratch_;
  DeviceBuffer wide_input_, wide_gradient_, wide_result_;  // the fp32 path's operands and result
  // Per type the activations are described with (fp32, bf16, fp16).
  std::array<std::unordered_map<BatchNormGeometry, std::unique_ptr<Plan>, GeometryHash>, 3> plans_;
};

}  // namespace phalanx::backend::cuda
