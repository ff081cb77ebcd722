// Launcher of the kernel that mixes a normalised batch in place with each sample's partner
// (Mixup or CutMix, Backend::mix_batch) and writes the partner labels for the loss.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

// `images` holds elements of `storage` (Backend::set_activation_precision).
void launch_mix_batch(cudaStream_t stream, ComputePrecision storage, const MixGeometry& geometry,
                      float* images, const std::int32_t* labels, std::int32_t* partner_labels);

}  // namespace phalanx::backend::cuda
