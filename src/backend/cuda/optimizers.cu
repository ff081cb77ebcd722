// SGD (momentum, Nesterov, L2 weight decay) and AdamW as torch.optim defines them, fused into one
// kernel each. The per-element arithmetic lives in optimizer_formulas.hpp, shared with host tests:
// each operation rounded on its own, in the CPU backend's order, so that both backends step the
// same parameters to the same bits. The per-step scalars (AdamW's bias corrections) are computed
// on the host in double exactly as the CPU backend does.
#include "cuda_check.hpp"
#include "launch.hpp"
#include "optimizer_formulas.hpp"
#include "optimizers.hpp"

namespace phalanx::backend::cuda {

namespace {

__global__ void sgd_step_kernel(std::int64_t count, SgdVariant variant, float learning_rate, float momentum,
                                float weight_decay, float* parameters, const float* gradients,
                                float* momentum_buffer) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float parameter = parameters[i];
    // Plain SGD keeps no buffer (momentum_buffer may be null): a local stands in for it.
    float buffer = variant == SgdVariant::Plain ? 0.0f : momentum_buffer[i];
    sgd_update(variant, learning_rate, momentum, weight_decay, parameter, gradients[i], buffer);
    parameters[i] = parameter;
    if (variant != SgdVariant::Plain) momentum_buffer[i] = buffer;
  }
}

__global__ void adamw_step_kernel(std::int64_t count, AdamWScalars scalars, float* parameters,
                                  const float* gradients, float* first_moment, float* second_moment) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float parameter = parameters[i], first = first_moment[i], second = second_moment[i];
    adamw_update(scalars, parameter, gradients[i], first, second);
    parameters[i] = parameter;
    first_moment[i] = first;
    second_moment[i] = second;
  }
}

}  // namespace

void launch_sgd_step(cudaStream_t stream, std::int64_t count, const SgdHyperparameters& hyperparameters,
                     float* parameters, const float* gradients, float* momentum_buffer) {
  if (count <= 0) return;
  sgd_step_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
      count, sgd_variant(hyperparameters), hyperparameters.learning_rate, hyperparameters.momentum,
      hyperparameters.weight_decay, parameters, gradients, momentum_buffer);
  PHALANX_CUDA_LAUNCHED("sgd_step_kernel");
}

void launch_adamw_step(cudaStream_t stream, std::int64_t count, const AdamWHyperparameters& hyperparameters,
                       float* parameters, const float* gradients, float* first_moment, float* second_moment) {
  if (count <= 0) return;
  adamw_step_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(
      count, adamw_scalars(hyperparameters), parameters, gradients, first_moment, second_moment);
  PHALANX_CUDA_LAUNCHED("adamw_step_kernel");
}

}  // namespace phalanx::backend::cuda
