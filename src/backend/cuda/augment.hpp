// Launcher of the input kernel that augments (crop with padding, flip, cutout, erasing) and
// normalises a uint8 NHWC batch on the device, given each image's draws (Backend::augment_normalize_images).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

// `output` holds elements of `storage` (Backend::set_activation_precision).
void launch_augment_normalize_images(cudaStream_t stream, ComputePrecision storage,
                                     const AugmentGeometry& geometry, const std::uint8_t* images,
                                     const std::int32_t* draws, const float* mean,
                                     const float* standard_deviation, float* output);

}  // namespace phalanx::backend::cuda
