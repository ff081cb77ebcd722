// Convolutions of the CPU backend on oneDNN: forward, backward data and backward weights (+ bias)
// for NHWC activations and PyTorch's oihw weights, with primitives cached per geometry.
#pragma once

#include "dnnl_context.hpp"
#include "phalanx/backend/geometry.hpp"
#include "primitive_cache.hpp"

namespace phalanx::backend::cpu {

class Convolutions {
 public:
  explicit Convolutions(DnnlContext& context);
  ~Convolutions();
  Convolutions(const Convolutions&) = delete;
  Convolutions& operator=(const Convolutions&) = delete;

  void forward(const ConvolutionGeometry& geometry, const float* input, const float* weight,
               const float* bias, float* output);
  void backward_data(const ConvolutionGeometry& geometry, const float* grad_output, const float* weight,
                     float* grad_input);
  void backward_weights(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                        float* grad_weight, float* grad_bias);

 private:
  struct Primitives;
  Primitives& primitives(const ConvolutionGeometry& geometry);

  DnnlContext& context_;
  PrimitiveCache<ConvolutionGeometry, Primitives> cache_;
};

}  // namespace phalanx::backend::cpu
