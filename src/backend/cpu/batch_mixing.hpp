// Mixup and CutMix of a normalised batch in place on the CPU backend (Backend::mix_batch): the
// reference the CUDA kernel is compared with, over fp32 or bf16 activations.
#pragma once

#include <cstdint>

#include "activation_element.hpp"
#include "phalanx/backend/geometry.hpp"

namespace phalanx::backend::cpu {

void mix_batch(const MixGeometry& geometry, float* images, const std::int32_t* labels,
               std::int32_t* partner_labels);
void mix_batch(const MixGeometry& geometry, Bf16* images, const std::int32_t* labels,
               std::int32_t* partner_labels);

}  // namespace phalanx::backend::cpu
