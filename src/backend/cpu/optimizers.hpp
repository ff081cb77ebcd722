// Optimizer updates of the CPU backend: one fused pass over the flat parameter buffer each,
// with torch.optim.SGD and torch.optim.AdamW semantics.
#pragma once

#include <cstdint>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cpu {

void sgd_step(std::int64_t count, const SgdHyperparameters& hyperparameters, float* parameters,
              const float* gradients, float* momentum_buffer);
void adamw_step(std::int64_t count, const AdamWHyperparameters& hyperparameters, float* parameters,
                const float* gradients, float* first_moment, float* second_moment);

}  // namespace phalanx::backend::cpu
