// Launcher of the kernel that resizes each image of a batch by its window (Backend::resample_images),
// a GPU rank's RandomResizedCrop.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "phalanx/backend/geometry.hpp"

namespace phalanx::backend::cuda {

void launch_resample_images(cudaStream_t stream, const ResampleGeometry& geometry, const std::uint8_t* images,
                            const std::int32_t* windows, std::uint8_t* output);

}  // namespace phalanx::backend::cuda
