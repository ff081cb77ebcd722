// Linear layers on oneDNN inner products; activations stay plain [batch, features]. Forward lets
// oneDNN pick the weight layout (brgemm, with a reorder from [out, in]); both backward passes use
// [out, in] directly (gemm). Measured at 3136->128, batch 64, 1 thread: forward any 0.55 ms vs
// plain 0.65 ms; backward (data + weights) plain 0.92 ms vs any 1.5 ms, where the weight and
// weight-gradient reorders of 1.6 MB each cost more than brgemm saves.
//
// bf16 compute (set_precision): bf16 input, weight and output-gradient operands, fp32 accumulation,
// fp32 output, input gradient, weight and bias gradients, as torch.autocast runs a linear layer.
// The operands are converted on the way in by LayoutBridge reorders (round to nearest even). As in
// fp32, forward lets oneDNN pick the weight layout (brgemm) and both backward passes use [out, in]
// (gemm), which writes the fp32 weight gradient straight into the caller's buffer: at 3136->128,
// batch 64, 1 thread, bf16 backward took 0.79 ms that way against 1.44 ms with oneDNN's blocked
// layouts and their reorders (fp32: 1.00 ms; bench/backend_ops.cpp, under load).
//
// bf16 activations (set_storage, train.activation_dtype: bf16, which needs bf16 compute): input,
// output and their gradients are bf16 at the op boundary, read as they are and written by the
// primitives in bf16 (fp32 accumulation, one rounding); only the weights are converted per call,
// and the weight and bias gradients stay fp32.
#include "linear.hpp"

#include <cstring>
#include <optional>

#include "elementwise.hpp"
#include "phalanx/core/error.hpp"
#include "relu_post_op.hpp"

namespace phalanx::backend::cpu {

namespace {

using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

}  // namespace

struct Linears::Primitives {
  Primitives(const LinearGeometry& geometry, DnnlContext& context, ComputePrecision precision,
             ComputePrecision storage);

  dnnl::memory input, output, weight, bias, grad_output, grad_input, grad_weight, grad_bias;
  // Stand-ins for an absent bias (zeros) and an unwanted bias gradient, so one primitive serves
  // callers with and without them.
  dnnl::memory zero_bias, discarded_grad_bias;

  dnnl::inner_product_forward forward;
  LayoutBridge input_for_forward, weight_for_forward;
  dnnl::memory forward_scratchpad;
  std::unordered_map<int, dnnl::memory> forward_arguments;

  // The forward with the ReLU after it as a oneDNN post-op (see forward_with_relu).
  std::optional<dnnl::inner_product_forward::desc> forward_operation;
  dnnl::inner_product_forward::primitive_desc forward_primitive_descriptor;
  bool forward_with_relu_tried = false;
  std::optional<dnnl::inner_product_forward> forward_relu;
  dnnl::memory forward_relu_scratchpad;
  std::unordered_map<int, dnnl::memory> forward_relu_arguments;
  dnnl::inner_product_forward* forward_with_relu(DnnlContext& context);

  // Both backward directions read grad_output in the same layout and type: one conversion.
  LayoutBridge grad_output_for_backward;

  dnnl::inner_product_backward_data backward_data;
  LayoutBridge weight_for_backward_data;
  dnnl::memory backward_data_scratchpad;
  std::unordered_map<int, dnnl::memory> backward_data_arguments;

  dnnl::inner_product_backward_weights backward_weights;
  LayoutBridge input_for_backward_weights, grad_weight_from_backward;
  dnnl::memory backward_weights_scratchpad;
  std::unordered_map<int, dnnl::memory> backward_weights_arguments;
};

Linears::Primitives::Primitives(const LinearGeometry& geometry, DnnlContext& context,
                                ComputePrecision precision, ComputePrecision storage) {
  const dnnl::engine& engine = context.engine;
  const bool bf16 = precision == ComputePrecision::BFloat16;
  PHALANX_CHECK(bf16 || storage == ComputePrecision::Float32,
                "bf16 activations need the linear layers to compute in bf16");
  const DataType operand_type = bf16 ? DataType::bf16 : DataType::f32;
  const DataType activation_type = storage == ComputePrecision::BFloat16 ? DataType::bf16 : DataType::f32;
  const dnnl::memory::dims input_dims{geometry.batch, geometry.in_features};
  const dnnl::memory::dims output_dims{geometry.batch, geometry.out_features};
  const dnnl::memory::desc input_descriptor(input_dims, activation_type, Tag::nc);
  const dnnl::memory::desc output_descriptor(output_dims, activation_type, Tag::nc);
  const dnnl::memory::desc input_operand_descriptor(input_dims, operand_type, Tag::nc);
  const dnnl::memory::desc grad_output_operand_descriptor(output_dims, operand_type, Tag::nc);
  const dnnl::memory::dims weight_dims{geometry.out_features, geometry.in_features};
  const dnnl::memory::desc weight_descriptor(weight_dims, DataType::f32, Tag::oi);
  const dnnl::memory::desc forward_weight_descriptor(weight_dims, operand_type, Tag::any);
  const dnnl::memory::desc backward_weight_descriptor(weight_dims, operand_type, Tag::oi);
  const dnnl::memory::desc grad_weight_descriptor(weight_dims, DataType::f32, Tag::oi);
  const dnnl::memory::desc bias_descriptor({geometry.out_features}, DataType::f32, Tag::x);
  const dnnl::primitive_attr attributes = DnnlContext::primitive_attributes();

  input = context.unbound_memory(input_descriptor);
  grad_input = context.unbound_memory(input_descriptor);
  output = context.unbound_memory(output_descriptor);
  grad_output = context.unbound_memory(output_descriptor);
  weight = context.unbound_memory(weight_descriptor);
  grad_weight = context.unbound_memory(weight_descriptor);
  bias = context.unbound_memory(bias_descriptor);
  grad_bias = context.unbound_memory(bias_descriptor);
  zero_bias = dnnl::memory(bias_descriptor, engine);
  std::memset(zero_bias.get_data_handle(), 0, bias_descriptor.get_size());
  discarded_grad_bias = dnnl::memory(bias_descriptor, engine);

  const dnnl::inner_product_forward::desc forward_descriptor(dnnl::prop_kind::forward_training,
                                                             input_operand_descriptor, forward_weight_descriptor,
                                                             bias_descriptor, output_descriptor);
  const dnnl::inner_product_forward::primitive_desc forward_primitive(forward_descriptor, attributes, engine);
  forward = dnnl::inner_product_forward(forward_primitive);
  forward_operation = forward_descriptor;
  forward_primitive_descriptor = forward_primitive;
  input_for_forward = LayoutBridge::into(input, forward_primitive.src_desc());
  weight_for_forward = LayoutBridge::into(weight, forward_primitive.weights_desc());
  context.reserve_transient({&input_for_forward, &weight_for_forward});
  forward_scratchpad = context.scratchpad_memory(forward_primitive);
  forward_arguments = {{DNNL_ARG_SRC, input_for_forward.internal},
                       {DNNL_ARG_WEIGHTS, weight_for_forward.internal},
                       {DNNL_ARG_BIAS, bias},
                       {DNNL_ARG_DST, output},
                       {DNNL_ARG_SCRATCHPAD, forward_scratchpad}};

  const dnnl::inner_product_backward_data::desc backward_data_descriptor(
      input_descriptor, backward_weight_descriptor, grad_output_operand_descriptor);
  const dnnl::inner_product_backward_data::primitive_desc backward_data_primitive(
      backward_data_descriptor, attributes, engine, forward_primitive);
  backward_data = dnnl::inner_product_backward_data(backward_data_primitive);
  grad_output_for_backward = LayoutBridge::into(grad_output, grad_output_operand_descriptor);
  weight_for_backward_data = LayoutBridge::into(weight, backward_data_primitive.weights_desc());
  context.reserve_transient({&grad_output_for_backward, &weight_for_backward_data});
  backward_data_scratchpad = context.scratchpad_memory(backward_data_primitive);
  backward_data_arguments = {{DNNL_ARG_DIFF_DST, grad_output_for_backward.internal},
                             {DNNL_ARG_WEIGHTS, weight_for_backward_data.internal},
                             {DNNL_ARG_DIFF_SRC, grad_input},
                             {DNNL_ARG_SCRATCHPAD, backward_data_scratchpad}};

  const dnnl::inner_product_backward_weights::desc backward_weights_descriptor(
      input_operand_descriptor, grad_weight_descriptor, bias_descriptor, grad_output_operand_descriptor);
  const dnnl::inner_product_backward_weights::primitive_desc backward_weights_primitive(
      backward_weights_descriptor, attributes, engine, forward_primitive);
  backward_weights = dnnl::inner_product_backward_weights(backward_weights_primitive);
  PHALANX_CHECK(backward_weights_primitive.diff_dst_desc() == grad_output_operand_descriptor,
                "oneDNN's linear backward weights wants grad_output in another layout than backward data");
  input_for_backward_weights = LayoutBridge::into(input, backward_weights_primitive.src_desc());
  grad_weight_from_backward =
      LayoutBridge::out_of(grad_weight, backward_weights_primitive.diff_weights_desc());
  context.reserve_transient({&grad_output_for_backward, &weight_for_backward_data, &input_for_backward_weights,
                             &grad_weight_from_backward});
  backward_weights_scratchpad = context.scratchpad_memory(backward_weights_primitive);
  backward_weights_arguments = {{DNNL_ARG_SRC, input_for_backward_weights.internal},
                                {DNNL_ARG_DIFF_DST, grad_output_for_backward.internal},
                                {DNNL_ARG_DIFF_WEIGHTS, grad_weight_from_backward.internal},
                                {DNNL_ARG_DIFF_BIAS, grad_bias},
                                {DNNL_ARG_SCRATCHPAD, backward_weights_scratchpad}};
}

// Made on the first fused call, and only when oneDNN picks the very implementation and layouts of
// the plain forward for it, so fused results are the plain ones bit for bit (NaN aside, see
// backend.hpp). Otherwise (null) the caller runs the plain forward and relu_forward in place.
dnnl::inner_product_forward* Linears::Primitives::forward_with_relu(DnnlContext& context) {
  if (forward_with_relu_tried) return forward_relu ? &*forward_relu : nullptr;
  forward_with_relu_tried = true;
  const auto& plain = forward_primitive_descriptor;
  const auto fused = relu_post_op_descriptor(*forward_operation, plain, context.engine);
  if (!fused) return nullptr;
  forward_relu = dnnl::inner_product_forward(*fused);
  forward_relu_scratchpad = context.scratchpad_memory(*fused);
  forward_relu_arguments = forward_arguments;
  forward_relu_arguments[DNNL_ARG_SCRATCHPAD] = forward_relu_scratchpad;
  return &*forward_relu;
}

Linears::Linears(DnnlContext& context) : context_(context) {}
Linears::~Linears() = default;

void Linears::set_storage(ComputePrecision precision) {
  PHALANX_CHECK(precision == ComputePrecision::Float32 || precision == ComputePrecision::BFloat16,
                "the CPU linear layers hold activations in fp32 or bf16");
  storage_ = precision;
}

void Linears::set_precision(ComputePrecision precision) {
  PHALANX_CHECK(precision == ComputePrecision::Float32 || precision == ComputePrecision::BFloat16,
                "the CPU linear layers compute in fp32 or bf16");
  precision_ = precision;
}

Linears::Primitives& Linears::primitives(const LinearGeometry& geometry) {
  // One entry per shape: the fused forward lives beside the plain one (backward ignores the
  // activation).
  LinearGeometry shape = geometry;
  shape.activation = FusedActivation::None;
  try {
    return cache_.find_or_create_with(precision_, storage_, shape, context_, precision_, storage_);
  } catch (const dnnl::error& error) {
    throw_dnnl_error(error,
                     detail::concat("create ", precision_ == ComputePrecision::BFloat16 ? "bf16 " : "",
                                    "linear ", geometry.in_features, "->", geometry.out_features,
                                    " for batch ", geometry.batch),
                     __FILE__, __LINE__);
  }
}

void Linears::forward(const LinearGeometry& geometry, const float* input, const float* weight,
                      const float* bias, float* output) {
  Primitives& primitives = this->primitives(geometry);
  dnnl::inner_product_forward* with_relu = nullptr;
  if (geometry.activation == FusedActivation::Relu) {
    try {
      with_relu = primitives.forward_with_relu(context_);
    } catch (const dnnl::error& error) {
      throw_dnnl_error(error, "create linear forward with ReLU", __FILE__, __LINE__);
    }
  }
  primitives.input.set_data_handle(mutable_pointer(input));
  primitives.weight.set_data_handle(mutable_pointer(weight));
  primitives.bias.set_data_handle(bias ? mutable_pointer(bias) : primitives.zero_bias.get_data_handle());
  primitives.output.set_data_handle(output);
  context_.bind_scratchpad(with_relu ? primitives.forward_relu_scratchpad : primitives.forward_scratchpad);
  context_.bind_transient({&primitives.input_for_forward, &primitives.weight_for_forward});
  primitives.input_for_forward.run(context_.stream);
  primitives.weight_for_forward.run(context_.stream);
  if (with_relu)
    with_relu->execute(context_.stream, primitives.forward_relu_arguments);
  else
    primitives.forward.execute(context_.stream, primitives.forward_arguments);
  if (geometry.activation == FusedActivation::Relu && !with_relu) {
    const std::int64_t count = static_cast<std::int64_t>(geometry.batch) * geometry.out_features;
    if (storage_ == ComputePrecision::BFloat16)
      relu_forward(count, as_bf16(output), as_bf16(output));
    else
      relu_forward(count, output, output);
  }
}

void Linears::backward(const LinearGeometry& geometry, const float* input, const float* weight,
                       const float* grad_output, float* grad_input, float* grad_weight, float* grad_bias) {
  Primitives& primitives = this->primitives(geometry);
  primitives.grad_output.set_data_handle(mutable_pointer(grad_output));
  primitives.input.set_data_handle(mutable_pointer(input));
  primitives.grad_weight.set_data_handle(grad_weight);
  primitives.grad_bias.set_data_handle(grad_bias ? static_cast<void*>(grad_bias)
                                                 : primitives.discarded_grad_bias.get_data_handle());
  // One binding of the transient buffer for the whole call: the converted grad_output is read
  // by both directions.
  context_.bind_transient({&primitives.grad_output_for_backward, &primitives.weight_for_backward_data,
                           &primitives.input_for_backward_weights, &primitives.grad_weight_from_backward});
  primitives.grad_output_for_backward.run(context_.stream);
  if (grad_input) {
    primitives.weight.set_data_handle(mutable_pointer(weight));
    primitives.grad_input.set_data_handle(grad_input);
    context_.bind_scratchpad(primitives.backward_data_scratchpad);
    primitives.weight_for_backward_data.run(context_.stream);
    primitives.backward_data.execute(context_.stream, primitives.backward_data_arguments);
  }
  context_.bind_scratchpad(primitives.backward_weights_scratchpad);
  primitives.input_for_backward_weights.run(context_.stream);
  primitives.backward_weights.execute(context_.stream, primitives.backward_weights_arguments);
  primitives.grad_weight_from_backward.run(context_.stream);
}

}  // namespace phalanx::backend::cpu
