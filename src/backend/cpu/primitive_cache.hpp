// Cache of per-geometry op state (oneDNN primitives, their reorders and buffers): creating a
// primitive JIT-compiles code and costs far more than running it, so each geometry builds its
// state once and every later call with the same geometry finds it in a hash map. Op families
// that compute in more than one precision key their entries by geometry and precision, and those
// that touch activations also by the precision the activations are held in.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>

#include "phalanx/backend/backend.hpp"
#include "phalanx/backend/geometry.hpp"

namespace phalanx::backend::cpu {

struct GeometryHash {
  static std::size_t combine(std::initializer_list<long long> fields) {
    // The boost::hash_combine mix: order-sensitive, so (a, b) and (b, a) hash apart.
    std::size_t seed = 0;
    for (const long long field : fields)
      seed ^= std::hash<long long>{}(field) + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
    return seed;
  }
  std::size_t operator()(const ConvolutionGeometry& geometry) const {
    return combine({geometry.batch, geometry.in_channels, geometry.in_height, geometry.in_width,
                    geometry.out_channels, geometry.kernel_height, geometry.kernel_width, geometry.stride,
                    geometry.padding, geometry.groups, geometry.dilation, geometry.has_bias,
                    static_cast<long long>(geometry.activation)});
  }
  std::size_t operator()(const PoolingGeometry& geometry) const {
    return combine({geometry.batch, geometry.channels, geometry.in_height, geometry.in_width,
                    geometry.kernel_height, geometry.kernel_width, geometry.stride, geometry.padding, static_cast<long long>(geometry.kind)});
  }
  std::size_t operator()(const LinearGeometry& geometry) const {
    return combine({geometry.batch, geometry.in_features, geometry.out_features,
                    static_cast<long long>(geometry.activation)});
  }
};

// Entries are built by Entry(geometry, extra...) on first use and never move afterwards
// (held by unique_ptr), so memory objects inside them can be bound once and kept.
template <typename Geometry, typename Entry>
class PrimitiveCache {
 public:
  // The fp32 entry of `geometry` (op families that compute in fp32 only).
  template <typename... Arguments>
  Entry& find_or_create(const Geometry& geometry, Arguments&&... arguments) {
    return find_or_create_in(ComputePrecision::Float32, geometry, std::forward<Arguments>(arguments)...);
  }
  // The entry of `geometry` in `precision`; a new one is built as Entry(geometry, arguments...).
  template <typename... Arguments>
  Entry& find_or_create_in(ComputePrecision precision, const Geometry& geometry, Arguments&&... arguments) {
    return find_or_create_with(precision, ComputePrecision::Float32, geometry,
                               std::forward<Arguments>(arguments)...);
  }
  // The entry of `geometry` computed in `precision` over activations held in `storage`.
  template <typename... Arguments>
  Entry& find_or_create_with(ComputePrecision precision, ComputePrecision storage, const Geometry& geometry,
                             Arguments&&... arguments) {
    auto& entries = entries_[static_cast<std::size_t>(precision)][static_cast<std::size_t>(storage)];
    auto found = entries.find(geometry);
    if (found == entries.end())
      found =
          entries.emplace(geometry, std::make_unique<Entry>(geometry, std::forward<Arguments>(arguments)...))
              .first;
    return *found->second;
  }
  std::size_t size() const {
    std::size_t total = 0;
    for (const auto& by_storage : entries_)
      for (const auto& entries : by_storage) total += entries.size();
    return total;
  }

 private:
  // One map per pair of ComputePrecision values (Float32, BFloat16, Float16): compute, storage.
  std::unordered_map<Geometry, std::unique_ptr<Entry>, GeometryHash> entries_[3][3];
};

}  // namespace phalanx::backend::cpu
