// Pooling of the CPU backend on oneDNN: max (with the arg-max workspace backward needs) and
// average over NHWC activations in fp32 or bf16, primitives cached per geometry and storage.
#pragma once

#include <cstddef>

#include "dnnl_context.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/backend/geometry.hpp"
#include "primitive_cache.hpp"

namespace phalanx::backend::cpu {

class Poolings {
 public:
  explicit Poolings(DnnlContext& context);
  ~Poolings();
  Poolings(const Poolings&) = delete;
  Poolings& operator=(const Poolings&) = delete;

  // How the activations are held: fp32 (the default) or bf16 (Backend::set_activation_precision).
  // The workspace size may differ between the two: ask workspace_bytes after setting it.
  void set_storage(ComputePrecision precision);

  // Zero for average pooling, which needs no workspace.
  std::size_t workspace_bytes(const PoolingGeometry& geometry);
  // workspace may be null when no backward follows (evaluation).
  void forward(const PoolingGeometry& geometry, const float* input, float* output, void* workspace);
  void backward(const PoolingGeometry& geometry, const float* grad_output, const void* workspace,
                float* grad_input);

 private:
  struct Primitives;
  Primitives& primitives(const PoolingGeometry& geometry);

  DnnlContext& context_;
  ComputePrecision storage_ = ComputePrecision::Float32;
  PrimitiveCache<PoolingGeometry, Primitives> cache_;
};

}  // namespace phalanx::backend::cpu
