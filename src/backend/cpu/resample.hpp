// The CPU backend's resample_images: each image of a batch resized by its window, the loader's
// data::resample_bilinear on the backend's side (the reference the CUDA kernel is compared with).
#pragma once

#include <cstdint>

#include "phalanx/backend/geometry.hpp"

namespace phalanx::backend::cpu {

void resample_images(const ResampleGeometry& geometry, const std::uint8_t* images,
                     const std::int32_t* windows, std::uint8_t* output);

}  // namespace phalanx::backend::cpu
