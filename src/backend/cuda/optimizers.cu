// SGD (momentum, Nesterov, L2 weight decay) and AdamW as torch.optim defines them, fused into one
// kernel each. The per-step scalars (AdamW's bias corrections) are computed on the host in double
// exactly as the CPU backend does, so both backends feed the kernels the same floats.
#include <cmath>

#include "cuda_check.hpp"
#include "launch.hpp"
#include "optimizers.hpp"

namespace phalanx::backend::cuda {

namespace {

enum class SgdVariant { Plain, Momentum, Nesterov };

__global__ void sgd_step_kernel(std::int64_t count, SgdVariant variant, float learning_rate, float momentum,
                                float weight_decay, float* parameters, const float* gradients,
                                float* momentum_buffer) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float gradient = gradients[i] + weight_decay * parameters[i];
    if (variant == SgdVariant::Plain) {
      parameters[i] -= learning_rate * gradient;
      continue;
    }
    // The buffer starts at zero, so the first step's momentum * 0 + g equals PyTorch's buf = g.
    const float buffer = momentum * momentum_buffer[i] + gradient;
    momentum_buffer[i] = buffer;
    parameters[i] -=
        learning_rate * (variant == SgdVariant::Nesterov ? gradient + momentum * buffer : buffer);
  }
}

__global__ void adamw_step_kernel(std::int64_t count, float beta1, float beta2, float epsilon,
                                  float decay_factor, float step_size, float sqrt_correction2,
                                  float* parameters, const float* gradients, float* first_moment,
                                  float* second_moment) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float gradient = gradients[i];
    const float first = beta1 * first_moment[i] + (1.0f - beta1) * gradient;
    const float second = beta2 * second_moment[i] + (1.0f - beta2) * gradient * gradient;
    first_moment[i] = first;
    second_moment[i] = second;
    // PyTorch: param -= step_size * m / (sqrt(v) / sqrt(bias_correction2) + eps), after decay.
    parameters[i] =
        parameters[i] * decay_factor - step_size * first / (sqrtf(second) / sqrt_correction2 + epsilon);
  }
}

}  // namespace

void launch_sgd_step(cudaStream_t stream, std::int64_t count, const SgdHyperparameters& hyperparameters,
                     float* parameters, const float* gradients, float* momentum_buffer) {
  if (count <= 0) return;
  const SgdVariant variant = hyperparameters.momentum == 0.0f ? SgdVariant::Plain
                             : hyperparameters.nesterov       ? SgdVariant::Nesterov
                                                              : SgdVariant::Momentum;
  sgd_step_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
      count, variant, hyperparameters.learning_rate, hyperparameters.momentum, hyperparameters.weight_decay,
      parameters, gradients, momentum_buffer);
  PHALANX_CUDA_LAUNCHED("sgd_step_kernel");
}

void launch_adamw_step(cudaStream_t stream, std::int64_t count, const AdamWHyperparameters& hyperparameters,
                       float* parameters, const float* gradients, float* first_moment, float* second_moment) {
  if (count <= 0) return;
  const float learning_rate = hyperparameters.learning_rate;
  const float decay_factor = 1.0f - learning_rate * hyperparameters.weight_decay;
  const double step = static_cast<double>(hyperparameters.step);
  const float step_size =
      static_cast<float>(learning_rate / (1.0 - std::pow(static_cast<double>(hyperparameters.beta1), step)));
  const float sqrt_correction2 =
      static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(hyperparameters.beta2), step)));
  adamw_step_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
      count, hyperparameters.beta1, hyperparameters.beta2, hyperparameters.epsilon, decay_factor, step_size,
      sqrt_correction2, parameters, gradients, first_moment, second_moment);
  PHALANX_CUDA_LAUNCHED("adamw_step_kernel");
}

}  // namespace phalanx::backend::cuda
