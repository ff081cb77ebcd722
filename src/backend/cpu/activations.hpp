// The activations of ActivationKind (Relu6, Sigmoid, Hardsigmoid, SiLU, Hardswish, GELU) on the CPU
// backend: oneDNN eltwise primitives over the activations as one flat array, in fp32 or bf16
// storage, so the arithmetic is oneDNN's vectorised code and the same code a fused convolution or
// linear layer runs as its post-op (eltwise_algorithm below feeds both).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "dnnl_context.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/backend/geometry.hpp"

namespace phalanx::backend::cpu {

// An activation as oneDNN names it: the algorithm with its alpha and beta.
struct EltwiseAlgorithm {
  dnnl::algorithm algorithm;
  float alpha = 0.0f, beta = 0.0f;
};

// The forward algorithm of `kind` (for post-ops and the forward primitive).
EltwiseAlgorithm eltwise_algorithm(ActivationKind kind);

class Activations {
 public:
  explicit Activations(DnnlContext& context);
  ~Activations();  // where Primitives is complete
  Activations(const Activations&) = delete;
  Activations& operator=(const Activations&) = delete;

  // How activations are held: fp32 (the default) or bf16 (computed in fp32, rounded once).
  void set_storage(ComputePrecision precision);

  // As Backend::activation_forward and activation_backward; output may be input, grad_input may be
  // grad_output.
  void forward(ActivationKind kind, std::int64_t count, const float* input, float* output);
  void backward(ActivationKind kind, std::int64_t count, const float* input, const float* output,
                const float* grad_output, float* grad_input);

 private:
  struct Primitives;
  Primitives& primitives(ActivationKind kind, std::int64_t count);

  DnnlContext& context_;
  ComputePrecision storage_ = ComputePrecision::Float32;
  // One entry per kind, element count and storage: creating a primitive compiles code, running
  // it costs far less.
  std::map<std::tuple<ActivationKind, std::int64_t, ComputePrecision>, std::unique_ptr<Primitives>> cache_;
};

}  // namespace phalanx::backend::cpu
