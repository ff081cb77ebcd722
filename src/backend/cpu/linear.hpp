// Fully connected layers of the CPU backend on oneDNN inner products: input [batch, in], weight
// [out, in] as PyTorch stores it, output [batch, out]; fp32 or bf16 compute, primitives cached per
// geometry, precision and activation storage.
#pragma once

#include "dnnl_context.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/backend/geometry.hpp"
#include "primitive_cache.hpp"

namespace phalanx::backend::cpu {

class Linears {
 public:
  explicit Linears(DnnlContext& context);
  ~Linears();
  Linears(const Linears&) = delete;
  Linears& operator=(const Linears&) = delete;

  // fp32 (the default) or bf16: bf16 operands, fp32 accumulation and fp32 results (see the .cpp).
  void set_precision(ComputePrecision precision);
  // How activations (input, output and their gradients) are held: fp32 (the default) or bf16,
  // which needs bf16 compute.
  void set_storage(ComputePrecision precision);

  // bias may be null (no bias).
  void forward(const LinearGeometry& geometry, const float* input, const float* weight, const float* bias,
               float* output);
  // grad_input and grad_bias may be null.
  void backward(const LinearGeometry& geometry, const float* input, const float* weight,
                const float* grad_output, float* grad_input, float* grad_weight, float* grad_bias);

 private:
  struct Primitives;
  Primitives& primitives(const LinearGeometry& geometry);

  DnnlContext& context_;
  ComputePrecision precision_ = ComputePrecision::Float32;
  ComputePrecision storage_ = ComputePrecision::Float32;
  PrimitiveCache<LinearGeometry, Primitives> cache_;
};

}  // namespace phalanx::backend::cpu
