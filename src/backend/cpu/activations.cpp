// Activations (see activations.hpp): per kind, count and storage one forward and one backward
// eltwise primitive over a flat array, built on first use. The kinds whose derivative is a function
// of the output run oneDNN's use_dst_for_bwd algorithms (Relu6, Sigmoid), so backward reads the
// output only and a fused producer need not keep its pre-activation values; Hardsigmoid has no such
// algorithm in oneDNN and its backward is a loop here (elementwise.cpp).
#include "activations.hpp"

#include "activation_element.hpp"
#include "elementwise.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend::cpu {

namespace {

using DataType = dnnl::memory::data_type;
using Tag = dnnl::memory::format_tag;

const char* kind_name(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::Relu6: return "relu6";
    case ActivationKind::Sigmoid: return "sigmoid";
    case ActivationKind::Hardsigmoid: return "hardsigmoid";
    case ActivationKind::Silu: return "silu";
    case ActivationKind::Hardswish: return "hardswish";
    case ActivationKind::Gelu: return "gelu";
    case ActivationKind::GeluTanh: return "gelu (tanh)";
  }
  return "activation";
}

// The algorithm of the standalone primitives: the use_dst_for_bwd variant where oneDNN has one
// (its forward computes what the plain algorithm does; its backward reads the output).
EltwiseAlgorithm primitive_algorithm(ActivationKind kind) {
  EltwiseAlgorithm form = eltwise_algorithm(kind);
  if (kind == ActivationKind::Relu6) form.algorithm = dnnl::algorithm::eltwise_clip_v2_use_dst_for_bwd;
  if (kind == ActivationKind::Sigmoid) form.algorithm = dnnl::algorithm::eltwise_logistic_use_dst_for_bwd;
  return form;
}

}  // namespace

EltwiseAlgorithm eltwise_algorithm(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::Relu6: return {dnnl::algorithm::eltwise_clip_v2, 0.0f, 6.0f};
    case ActivationKind::Sigmoid: return {dnnl::algorithm::eltwise_logistic};
    // max(0, min(1, alpha x + beta)): torch's relu6(x + 3) / 6 up to the rounding of 1/6.
    case ActivationKind::Hardsigmoid: return {dnnl::algorithm::eltwise_hardsigmoid, 1.0f / 6.0f, 0.5f};
    // x / (1 + exp(-alpha x)).
    case ActivationKind::Silu: return {dnnl::algorithm::eltwise_swish, 1.0f};
    // x * max(0, min(1, alpha x + beta)).
    case ActivationKind::Hardswish: return {dnnl::algorithm::eltwise_hardswish, 1.0f / 6.0f, 0.5f};
    case ActivationKind::Gelu: return {dnnl::algorithm::eltwise_gelu_erf};
    case ActivationKind::GeluTanh: return {dnnl::algorithm::eltwise_gelu_tanh};
  }
  throw_internal_error("unknown activation kind", __FILE__, __LINE__);
}

struct Activations::Primitives {
  Primitives(ActivationKind kind, std::int64_t count, DnnlContext& context, ComputePrecision storage) {
    const dnnl::memory::desc flat(
        {count}, storage == ComputePrecision::BFloat16 ? DataType::bf16 : DataType::f32, Tag::a);
    const EltwiseAlgorithm form = primitive_algorithm(kind);
    const dnnl::primitive_attr attributes = DnnlContext::primitive_attributes();
    const dnnl::eltwise_forward::primitive_desc forward_descriptor(
        context.engine, dnnl::prop_kind::forward_training, form.algorithm, flat, flat, form.alpha, form.beta,
        attributes);
    forward = dnnl::eltwise_forward(forward_descriptor);
    forward_scratchpad = context.scratchpad_memory(forward_descriptor);
    source = context.unbound_memory(flat);
    destination = context.unbound_memory(flat);
    forward_arguments = {
        {DNNL_ARG_SRC, source}, {DNNL_ARG_DST, destination}, {DNNL_ARG_SCRATCHPAD, forward_scratchpad}};
    if (kind == ActivationKind::Hardsigmoid) return;  // backward: hardsigmoid_backward
    const dnnl::eltwise_backward::primitive_desc backward_descriptor(context.engine, form.algorithm, flat,
                                                                     flat, flat, form.alpha, form.beta,
                                                                     forward_descriptor, attributes);
    backward = dnnl::eltwise_backward(backward_descriptor);
    backward_scratchpad = context.scratchpad_memory(backward_descriptor);
    grad_output = context.unbound_memory(flat);
    grad_input = context.unbound_memory(flat);
    // The use_dst_for_bwd algorithms read the forward output as DNNL_ARG_DST, the others the input.
    backward_arguments = {{DNNL_ARG_DIFF_DST, grad_output},
                          {DNNL_ARG_DIFF_SRC, grad_input},
                          {backward_reads_output(kind) ? DNNL_ARG_DST : DNNL_ARG_SRC, source},
                          {DNNL_ARG_SCRATCHPAD, backward_scratchpad}};
  }

  dnnl::memory source, destination, grad_output, grad_input;
  dnnl::eltwise_forward forward;
  dnnl::memory forward_scratchpad;
  std::unordered_map<int, dnnl::memory> forward_arguments;
  dnnl::eltwise_backward backward;
  dnnl::memory backward_scratchpad;
  std::unordered_map<int, dnnl::memory> backward_arguments;
};

Activations::Activations(DnnlContext& context) : context_(context) {}
Activations::~Activations() = default;

void Activations::set_storage(ComputePrecision precision) {
  PHALANX_CHECK(precision == ComputePrecision::Float32 || precision == ComputePrecision::BFloat16,
                "the CPU activations hold values in fp32 or bf16");
  storage_ = precision;
}

Activations::Primitives& Activations::primitives(ActivationKind kind, std::int64_t count) {
  const auto key = std::make_tuple(kind, count, storage_);
  auto found = cache_.find(key);
  if (found != cache_.end()) return *found->second;
  try {
    return *cache_.emplace(key, std::make_unique<Primitives>(kind, count, context_, storage_)).first->second;
  } catch (const dnnl::error& error) {
    throw_dnnl_error(error,
                     detail::concat("create ", storage_ == ComputePrecision::BFloat16 ? "bf16 " : "",
                                    kind_name(kind), " over ", count, " values"),
                     __FILE__, __LINE__);
  }
}

void Activations::forward(ActivationKind kind, std::int64_t count, const float* input, float* output) {
  if (count <= 0) return;
  Primitives& primitives = this->primitives(kind, count);
  primitives.source.set_data_handle(mutable_pointer(input));
  primitives.destination.set_data_handle(output);
  context_.bind_scratchpad(primitives.forward_scratchpad);
  try {
    primitives.forward.execute(context_.stream, primitives.forward_arguments);
  } catch (const dnnl::error& error) {
    throw_dnnl_error(error, detail::concat("run ", kind_name(kind), " forward"), __FILE__, __LINE__);
  }
}

void Activations::backward(ActivationKind kind, std::int64_t count, const float* input, const float* output,
                           const float* grad_output, float* grad_input) {
  if (count <= 0) return;
  const float* read = backward_reads_output(kind) ? output : input;
  PHALANX_CHECK(read != nullptr, kind_name(kind), " backward needs its ",
                backward_reads_output(kind) ? "output" : "input");
  if (kind == ActivationKind::Hardsigmoid) {
    if (storage_ == ComputePrecision::BFloat16)
      hardsigmoid_backward(count, as_bf16(output), as_bf16(grad_output), as_bf16(grad_input));
    else
      hardsigmoid_backward(count, output, grad_output, grad_input);
    return;
  }
  Primitives& primitives = this->primitives(kind, count);
  primitives.source.set_data_handle(mutable_pointer(read));
  primitives.grad_output.set_data_handle(mutable_pointer(grad_output));
  primitives.grad_input.set_data_handle(grad_input);
  context_.bind_scratchpad(primitives.backward_scratchpad);
  try {
    primitives.backward.execute(context_.stream, primitives.backward_arguments);
  } catch (const dnnl::error& error) {
    throw_dnnl_error(error, detail::concat("run ", kind_name(kind), " backward"), __FILE__, __LINE__);
  }
}

}  // namespace phalanx::backend::cpu
