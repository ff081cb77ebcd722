// Convolutions of the CPU backend on oneDNN: forward, backward data and backward weights (+ bias)
// for NHWC activations and PyTorch's oihw weights, in fp32 or bf16 compute, with primitives cached
// per geometry, precision and activation storage.
#pragma once

#include "dnnl_context.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/backend/geometry.hpp"
#include "primitive_cache.hpp"

namespace phalanx::backend::cpu {

class Convolutions {
 public:
  explicit Convolutions(DnnlContext& context);
  ~Convolutions();
  Convolutions(const Convolutions&) = delete;
  Convolutions& operator=(const Convolutions&) = delete;

  // fp32 (the default) or bf16: bf16 operands, fp32 accumulation and fp32 results (see the .cpp).
  void set_precision(ComputePrecision precision);
  // How activations (input, output and their gradients) are held: fp32 (the default) or bf16.
  void set_storage(ComputePrecision precision);

  void forward(const ConvolutionGeometry& geometry, const float* input, const float* weight,
               const float* bias, float* output);
  void backward_data(const ConvolutionGeometry& geometry, const float* grad_output, const float* weight,
                     float* grad_input);
  void backward_weights(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                        float* grad_weight, float* grad_bias);
  // Both directions over one grad_output (Backend::convolution_backward); grad_input may be null.
  void backward(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                const float* weight, float* grad_input, float* grad_weight, float* grad_bias);

 private:
  struct Primitives;
  Primitives& primitives(const ConvolutionGeometry& geometry);

  DnnlContext& context_;
  ComputePrecision precision_ = ComputePrecision::Float32;
  ComputePrecision storage_ = ComputePrecision::Float32;
  PrimitiveCache<ConvolutionGeometry, Primitives> cache_;
};

}  // namespace phalanx::backend::cpu
