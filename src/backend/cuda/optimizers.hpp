// Fused optimizer steps over the flat parameter buffer: one kernel launch updates every
// parameter, its gradient and its state (SGD momentum, AdamW moments), with the CPU backend's
// (PyTorch's) formulas.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

// momentum_buffer may be null when momentum is 0 (torch.optim.SGD keeps none then).
void launch_sgd_step(cudaStream_t stream, std::int64_t count, const SgdHyperparameters& hyperparameters,
                     float* parameters, const float* gradients, float* momentum_buffer);
void launch_adamw_step(cudaStream_t stream, std::int64_t count, const AdamWHyperparameters& hyperparameters,
                       float* parameters, const float* gradients, float* first_moment, float* second_moment);

}  // namespace phalanx::backend::cuda
