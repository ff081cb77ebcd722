// Hashes of the op geometries, so the CUDA backend can key its per-shape caches (cuDNN
// descriptors and chosen algorithms) on them in unordered maps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "phalanx/backend/geometry.hpp"

namespace phalanx::backend::cuda {

struct GeometryHash {
  static std::size_t combine(std::initializer_list<std::int64_t> fields) {
    std::uint64_t hash = 14695981039346656037ull;  // FNV-1a style, one 64-bit field at a time
    for (const std::int64_t field : fields) {
      hash ^= static_cast<std::uint64_t>(field);
      hash *= 1099511628211ull;
    }
    return static_cast<std::size_t>(hash);
  }
  std::size_t operator()(const ConvolutionGeometry& g) const {
    return combine({g.batch, g.in_channels, g.in_height, g.in_width, g.out_channels, g.kernel_height,
                    g.kernel_width, g.stride, g.padding, g.groups, g.dilation, g.has_bias,
                    static_cast<std::int64_t>(g.activation)});
  }
  std::size_t operator()(const BatchNormGeometry& g) const {
    return combine({g.batch, g.channels, g.spatial, static_cast<std::int64_t>(g.activation)});
  }
};

}  // namespace phalanx::backend::cuda
