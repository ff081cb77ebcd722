// Launcher of the input kernel that augments (crop with padding, flip, auto-augment ops, cutout,
// erasing) and normalises a uint8 NHWC batch on the device, given each image's draws
// (Backend::augment_normalize_images).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

// The device scratch the kernel needs for `geometry` (two uint8 images per sample when it runs
// auto-augment ops, else none).
std::size_t augment_operations_scratch_bytes(const AugmentGeometry& geometry);

// `output` holds elements of `storage` (Backend::set_activation_precision); `scratch` holds
// augment_operations_scratch_bytes(geometry) bytes.
void launch_augment_normalize_images(cudaStream_t stream, ComputePrecision storage,
                                     const AugmentGeometry& geometry, const std::uint8_t* images,
                                     const std::int32_t* draws, const float* mean,
                                     const float* standard_deviation, float* output, std::uint8_t* scratch);

}  // namespace phalanx::backend::cuda
