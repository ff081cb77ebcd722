// Augmentation fused with input normalisation on the CPU backend (Backend::augment_normalize_images):
// the reference the CUDA kernel is compared with, and what a CPU rank would run if it augmented
// after the copy instead of in its loader thread.
#pragma once

#include <cstdint>

#include "activation_element.hpp"
#include "phalanx/backend/geometry.hpp"

namespace phalanx::backend::cpu {

void augment_normalize_images(const AugmentGeometry& geometry, const std::uint8_t* images,
                              const std::int32_t* draws, const float* mean, const float* standard_deviation,
                              float* output);
void augment_normalize_images(const AugmentGeometry& geometry, const std::uint8_t* images,
                              const std::int32_t* draws, const float* mean, const float* standard_deviation,
                              Bf16* output);

}  // namespace phalanx::backend::cpu
