// How the CPU backend describes a linear layer to oneDNN's inner product (the hooks of
// WeightedLayers, see weighted_layers.hpp); activations stay plain [batch, features]. Forward lets
// oneDNN pick the weight layout (brgemm, with a reorder from [out, in]); both backward passes use
// [out, in] directly (gemm). Measured at 3136->128, batch 64, 1 thread (oneDNN 2.6.3): forward any
// 0.55 ms vs plain 0.65 ms; backward (data + weights) plain 0.92 ms vs any 1.5 ms, where the weight
// and weight-gradient reorders of 1.6 MB each cost more than brgemm saves. oneDNN 3.2 picks the same
// kernels (ONEDNN_VERBOSE=1: brgemm forward, on AMX in bf16; gemm:jit backward).
//
// bf16 compute (set_precision): bf16 input, weight and output-gradient operands, fp32 accumulation,
// fp32 output, input gradient, weight and bias gradients, as torch.autocast runs a linear layer.
// The operands are converted on the way in by LayoutBridge reorders (round to nearest even). As in
// fp32, forward lets oneDNN pick the weight layout (brgemm) and both backward passes use [out, in]
// (gemm), which writes the fp32 weight gradient straight into the caller's buffer: at 3136->128,
// batch 64, 1 thread, bf16 backward took 0.79 ms that way against 1.44 ms with oneDNN's blocked
// layouts and their reorders (fp32: 1.00 ms; bench/backend_ops.cpp, under load, oneDNN 2.6.3).
//
// bf16 activations (set_storage, train.activation_dtype: bf16, which needs bf16 compute): input,
// output and their gradients are bf16 at the op boundary, read as they are and written by the
// primitives in bf16 (fp32 accumulation, one rounding); only the weights are converted per call,
// and the weight and bias gradients stay fp32.
#include "linear.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::backend::cpu {

namespace {

using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

}  // namespace

// A linear layer always has a bias operand: zeros stand in for a caller without one, so one
// primitive serves both.
LayerOperands layer_operands(const LinearGeometry& geometry, DataType activation_type) {
  return {dnnl::memory::desc({geometry.batch, geometry.in_features}, activation_type, Tag::nc),
          dnnl::memory::desc({geometry.batch, geometry.out_features}, activation_type, Tag::nc),
          dnnl::memory::desc({geometry.out_features, geometry.in_features}, DataType::f32, Tag::oi),
          dnnl::memory::desc({geometry.out_features}, DataType::f32, Tag::x)};
}

std::optional<LayerDescriptors> describe_layer(const LinearGeometry&, const LayerOperands& operands,
                                               DataType operand_type, DataType result_type,
                                               const dnnl::engine& engine) {
  const ActivationDescriptors activations = activation_descriptors(operands, operand_type, result_type);
  const dnnl::memory::desc forward_weight(operands.weight.get_dims(), operand_type, Tag::any);
  const dnnl::memory::desc backward_weight(operands.weight.get_dims(), operand_type, Tag::oi);
  const dnnl::memory::desc grad_weight(operands.weight.get_dims(), DataType::f32, Tag::oi);
  const dnnl::memory::desc bias = operands.bias;
  constexpr bool allow_empty = true;
  const auto describe_forward = [=](const dnnl::primitive_attr& attributes) {
    return dnnl::inner_product_forward::primitive_desc(engine, dnnl::prop_kind::forward_training,
                                                       activations.input, forward_weight, bias,
                                                       activations.output, attributes, allow_empty);
  };
  const dnnl::primitive_attr attributes = DnnlContext::primitive_attributes();
  const dnnl::inner_product_forward::primitive_desc forward = describe_forward(attributes);
  if (!forward) return std::nullopt;
  const dnnl::inner_product_backward_data::primitive_desc backward_data(
      engine, activations.grad_input, backward_weight, activations.grad_output, forward, attributes,
      allow_empty);
  if (!backward_data) return std::nullopt;
  const dnnl::inner_product_backward_weights::primitive_desc backward_weights(
      engine, activations.input, grad_weight, bias, activations.grad_output, forward, attributes,
      allow_empty);
  if (!backward_weights) return std::nullopt;
  return LayerDescriptors{forward, backward_data, backward_weights, describe_forward};
}

std::string layer_name(const LinearGeometry& geometry) {
  return detail::concat("linear ", geometry.in_features, "->", geometry.out_features, " for batch ",
                        geometry.batch);
}

}  // namespace phalanx::backend::cpu
