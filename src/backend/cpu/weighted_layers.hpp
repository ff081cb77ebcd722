// The oneDNN primitives of the layers with weights (convolutions, linear layers), held and run one
// way for both: forward (with the activation fused where oneDNN keeps the plain kernel), backward data and
// backward weights, with the layout and type conversions at the op boundary, cached per geometry,
// compute precision and activation storage. A family says only how its primitives are described.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>

#include "activations.hpp"
#include "dnnl_context.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/backend/geometry.hpp"
#include "primitive_cache.hpp"

namespace phalanx::backend::cpu {

// The caller's buffers as the op boundary holds them (NHWC or [batch, features] activations in the
// storage type, fp32 weights as PyTorch stores them, an fp32 bias; a zero bias descriptor for a
// layer without one). Gradients are held as what they are the gradients of.
struct LayerOperands {
  dnnl::memory::desc input, output, weight, bias;
};

// The activations as a layer's primitives see them, in the caller's layout: read (input,
// grad_output) as `operand_type`, written (output, grad_input) as `result_type`.
struct ActivationDescriptors {
  dnnl::memory::desc input, output, grad_input, grad_output;
};
ActivationDescriptors activation_descriptors(const LayerOperands& operands,
                                             dnnl::memory::data_type operand_type,
                                             dnnl::memory::data_type result_type);

// The three primitive descriptors of one layer, made with DnnlContext::primitive_attributes(), and
// the forward made again with other attributes (nothing where oneDNN has no implementation for them).
struct LayerDescriptors {
  dnnl::primitive_desc forward, backward_data, backward_weights;
  std::function<dnnl::primitive_desc(const dnnl::primitive_attr&)> forward_with;
};

// What a family provides for its geometry (convolution.cpp, linear.cpp): its operands with
// activations of `activation_type`; its primitives reading operands of `operand_type` and writing the
// output and input gradient in `result_type` (weight and bias gradients are fp32), or nothing where
// oneDNN has none; and the words that name one layer in an error.
LayerOperands layer_operands(const ConvolutionGeometry& geometry, dnnl::memory::data_type activation_type);
LayerOperands layer_operands(const LinearGeometry& geometry, dnnl::memory::data_type activation_type);
std::optional<LayerDescriptors> describe_layer(const ConvolutionGeometry& geometry,
                                               const LayerOperands& operands,
                                               dnnl::memory::data_type operand_type,
                                               dnnl::memory::data_type result_type,
                                               const dnnl::engine& engine);
std::optional<LayerDescriptors> describe_layer(const LinearGeometry& geometry, const LayerOperands& operands,
                                               dnnl::memory::data_type operand_type,
                                               dnnl::memory::data_type result_type,
                                               const dnnl::engine& engine);
std::string layer_name(const ConvolutionGeometry& geometry);
std::string layer_name(const LinearGeometry& geometry);

// One layer's primitives and their bridges between the caller's layouts and the primitives'.
// Built once per geometry; every call binds the caller's pointers to the same memory objects.
class WeightedLayerPrimitives {
 public:
  WeightedLayerPrimitives(DnnlContext& context, Activations& activations, const LayerOperands& operands,
                          const LayerDescriptors& descriptors);

  // bias may be null (zeros stand in); `activation` is applied to the output.
  void forward(const float* input, const float* weight, const float* bias, float* output,
               FusedActivation activation);
  void backward_data(const float* grad_output, const float* weight, float* grad_input);
  // grad_bias may be null (the bias gradient is then discarded).
  void backward_weights(const float* input, const float* grad_output, float* grad_weight, float* grad_bias);
  // oneDNN's name of the kernel it chose for backward weights (e.g. "jit_dw:avx512_core").
  std::string backward_weights_implementation() const { return descriptors_.backward_weights.impl_info_str(); }
  // Both directions over one grad_output; grad_input may be null.
  void backward(const float* input, const float* grad_output, const float* weight, float* grad_input,
                float* grad_weight, float* grad_bias);

 private:
  BridgedPrimitive bridged_forward(const dnnl::primitive_desc& descriptor);
  const BridgedPrimitive* fused_forward(FusedActivation activation);
  void bind_gradients(const float* input, const float* grad_output, float* grad_weight, float* grad_bias);

  DnnlContext& context_;
  Activations& activations_;  // the activation pass where oneDNN fuses none
  LayerDescriptors descriptors_;
  // Caller-layout views (no buffers): each call binds the caller's pointers to them.
  dnnl::memory input_, output_, weight_, bias_, grad_output_, grad_input_, grad_weight_, grad_bias_;
  // Zeros for a caller without a bias, and where the bias gradient goes when nobody wants it.
  dnnl::memory zero_bias_, discarded_grad_bias_;

  BridgedPrimitive forward_;
  // Per FusedActivation, the forward with it fused, made on the first call that asks for it
  // (nothing where it differs from the plain forward).
  static constexpr std::size_t fused_kinds = 5;
  std::array<bool, fused_kinds> fused_forward_tried_{};
  std::array<std::optional<BridgedPrimitive>, fused_kinds> fused_forward_;
  // Both backward directions read grad_output first, so backward can convert it once for both.
  BridgedPrimitive backward_data_, backward_weights_;
};

// The layers of one family (ConvolutionGeometry or LinearGeometry): compute precision, activation
// storage and the cache of their primitives.
template <typename Geometry>
class WeightedLayers {
 public:
  WeightedLayers(DnnlContext& context, Activations& activations);
  ~WeightedLayers();  // where Entry is complete (weighted_layers.cpp)
  WeightedLayers(const WeightedLayers&) = delete;
  WeightedLayers& operator=(const WeightedLayers&) = delete;

  // fp32 (the default) or bf16: bf16 operands, fp32 accumulation, results as the storage holds them.
  void set_precision(ComputePrecision precision);
  // How activations (input, output and their gradients) are held: fp32 (the default) or bf16.
  void set_storage(ComputePrecision precision);

  // bias may be null; geometry.activation is applied to the output.
  void forward(const Geometry& geometry, const float* input, const float* weight, const float* bias,
               float* output);
  void backward_data(const Geometry& geometry, const float* grad_output, const float* weight,
                     float* grad_input);
  // grad_bias may be null.
  void backward_weights(const Geometry& geometry, const float* input, const float* grad_output,
                        float* grad_weight, float* grad_bias);
  // Both directions over one grad_output (converted once where both want it alike); grad_input may
  // be null.
  void backward(const Geometry& geometry, const float* input, const float* grad_output, const float* weight,
                float* grad_input, float* grad_weight, float* grad_bias);
  // The kernel oneDNN runs for this shape's backward weights (creating the shape's primitives).
  std::string backward_weights_implementation(const Geometry& geometry);

 private:
  struct Entry;
  WeightedLayerPrimitives& primitives(const Geometry& geometry);
  // Runs `call` on the layer's primitives; a oneDNN error names the layer and the direction.
  template <typename Call>
  void run(const Geometry& geometry, const char* direction, const Call& call);

  DnnlContext& context_;
  Activations& activations_;
  ComputePrecision precision_ = ComputePrecision::Float32;
  ComputePrecision storage_ = ComputePrecision::Float32;
  PrimitiveCache<Geometry, Entry> cache_;
};

}  // namespace phalanx::backend::cpu
