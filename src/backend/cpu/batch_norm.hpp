// Batch normalisation of the CPU backend: OpenMP loops over NHWC data (channels contiguous, so
// every inner loop runs over channels and vectorises), with PyTorch's running-stat semantics.
// Activations (input, output and their gradients) in fp32 or bf16 storage (set_storage); gamma,
// beta, the statistics and the parameter gradients are fp32 either way.
#pragma once

#include <vector>

#include "activation_element.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/backend/geometry.hpp"

namespace phalanx::backend::cpu {

class BatchNorms {
 public:
  // How the activations are held: fp32 (the default) or bf16 (Backend::set_activation_precision).
  void set_storage(ComputePrecision precision);

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
  template <typename Element>
  void forward_training_of(const BatchNormGeometry& geometry, const Element* input, const float* gamma,
                           const float* beta, Element* output, float* running_mean, float* running_variance,
                           float momentum, float* saved_mean, float* saved_inverse_std);
  template <typename Element>
  void forward_inference_of(const BatchNormGeometry& geometry, const Element* input, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_variance,
                            Element* output);
  template <typename Element>
  void backward_of(const BatchNormGeometry& geometry, const Element* input, const Element* grad_output,
                   const float* gamma, const float* saved_mean, const float* saved_inverse_std,
                   Element* grad_input, float* grad_gamma, float* grad_beta);

  ComputePrecision storage_ = ComputePrecision::Float32;
  // Sums of each block of rows, two per channel; grows to the largest geometry seen, then stays.
  std::vector<float> block_sums_;
  // Per-channel coefficients of the final affine passes.
  std::vector<float> channel_center_, channel_scale_, channel_offset_, channel_centered_scale_;
};

}  // namespace phalanx::backend::cpu
