// Max and average pooling on oneDNN over NHWC activations. Average pooling counts the padding in
// the divisor, as torch.nn.AvgPool2d does by default (count_include_pad=True); max pooling
// ignores padded positions, as PyTorch's -inf padding does. Max pooling forward with a null
// workspace runs the inference primitive (evaluation needs no arg-max indices). Activations in fp32
// or bf16 (set_storage); oneDNN's bf16 pooling averages in fp32 and rounds once, and max pooling
// of bf16 values is exact.
#include "pooling.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::backend::cpu {

namespace {

using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

}  // namespace

struct Poolings::Primitives {
  Primitives(const PoolingGeometry& geometry, DnnlContext& context, ComputePrecision storage);

  dnnl::memory input, output, grad_output, grad_input, workspace;
  std::size_t workspace_bytes = 0;

  dnnl::pooling_forward forward;
  dnnl::memory forward_scratchpad;
  std::unordered_map<int, dnnl::memory> forward_arguments;

  // Max pooling without a workspace (evaluation): no arg-max indices written.
  dnnl::pooling_forward inference;
  dnnl::memory inference_scratchpad;
  std::unordered_map<int, dnnl::memory> inference_arguments;

  dnnl::pooling_backward backward;
  dnnl::memory backward_scratchpad;
  std::unordered_map<int, dnnl::memory> backward_arguments;
};

Poolings::Primitives::Primitives(const PoolingGeometry& geometry, DnnlContext& context,
                                 ComputePrecision storage) {
  const dnnl::engine& engine = context.engine;
  const DataType activation_type = storage == ComputePrecision::BFloat16 ? DataType::bf16 : DataType::f32;
  const dnnl::memory::desc input_descriptor(
      {geometry.batch, geometry.channels, geometry.in_height, geometry.in_width}, activation_type, Tag::nhwc);
  const dnnl::memory::desc output_descriptor(
      {geometry.batch, geometry.channels, geometry.out_height(), geometry.out_width()}, activation_type,
      Tag::nhwc);
  const dnnl::memory::dims strides{geometry.stride, geometry.stride};
  const dnnl::memory::dims kernel{geometry.kernel_height, geometry.kernel_width};
  const dnnl::memory::dims padding{geometry.padding, geometry.padding};
  // The right padding that reproduces PyTorch's floor-divided output size (ceil_mode=False).
  const dnnl::memory::dims padding_right{
      (geometry.out_height() - 1) * geometry.stride + geometry.kernel_height - geometry.in_height -
          geometry.padding,
      (geometry.out_width() - 1) * geometry.stride + geometry.kernel_width - geometry.in_width -
          geometry.padding};
  const auto algorithm = geometry.kind == PoolingKind::Max ? dnnl::algorithm::pooling_max
                                                           : dnnl::algorithm::pooling_avg_include_padding;
  const dnnl::primitive_attr attributes = DnnlContext::primitive_attributes();

  input = context.unbound_memory(input_descriptor);
  grad_input = context.unbound_memory(input_descriptor);
  output = context.unbound_memory(output_descriptor);
  grad_output = context.unbound_memory(output_descriptor);

  const dnnl::memory::dims no_dilation{0, 0};
  const dnnl::pooling_forward::primitive_desc forward_primitive(
      engine, dnnl::prop_kind::forward_training, algorithm, input_descriptor, output_descriptor, strides,
      kernel, no_dilation, padding, padding_right, attributes);
  forward = dnnl::pooling_forward(forward_primitive);
  forward_scratchpad = context.scratchpad_memory(forward_primitive);
  forward_arguments = {
      {DNNL_ARG_SRC, input}, {DNNL_ARG_DST, output}, {DNNL_ARG_SCRATCHPAD, forward_scratchpad}};

  const dnnl::pooling_forward::primitive_desc inference_primitive(
      engine, dnnl::prop_kind::forward_inference, algorithm, input_descriptor, output_descriptor, strides,
      kernel, no_dilation, padding, padding_right, attributes);
  inference = dnnl::pooling_forward(inference_primitive);
  inference_scratchpad = context.scratchpad_memory(inference_primitive);
  inference_arguments = {
      {DNNL_ARG_SRC, input}, {DNNL_ARG_DST, output}, {DNNL_ARG_SCRATCHPAD, inference_scratchpad}};

  const dnnl::pooling_backward::primitive_desc backward_primitive(
      engine, algorithm, input_descriptor, output_descriptor, strides, kernel, no_dilation, padding,
      padding_right, forward_primitive, attributes);
  backward = dnnl::pooling_backward(backward_primitive);
  backward_scratchpad = context.scratchpad_memory(backward_primitive);
  backward_arguments = {{DNNL_ARG_DIFF_DST, grad_output},
                        {DNNL_ARG_DIFF_SRC, grad_input},
                        {DNNL_ARG_SCRATCHPAD, backward_scratchpad}};

  if (geometry.kind == PoolingKind::Max) {
    const dnnl::memory::desc workspace_descriptor = forward_primitive.workspace_desc();
    workspace_bytes = workspace_descriptor.get_size();
    workspace = context.unbound_memory(workspace_descriptor);
    forward_arguments.emplace(DNNL_ARG_WORKSPACE, workspace);
    backward_arguments.emplace(DNNL_ARG_WORKSPACE, workspace);
  }
}

Poolings::Poolings(DnnlContext& context) : context_(context) {}
Poolings::~Poolings() = default;

void Poolings::set_storage(ComputePrecision precision) {
  PHALANX_CHECK(precision == ComputePrecision::Float32 || precision == ComputePrecision::BFloat16,
                "the CPU pooling holds activations in fp32 or bf16");
  storage_ = precision;
}

Poolings::Primitives& Poolings::primitives(const PoolingGeometry& geometry) {
  try {
    return cache_.find_or_create_with(ComputePrecision::Float32, storage_, geometry, context_, storage_);
  } catch (const dnnl::error& error) {
    throw_dnnl_error(error,
                     detail::concat("create ", storage_ == ComputePrecision::BFloat16 ? "bf16 " : "",
                                    geometry.kind == PoolingKind::Max ? "max" : "average", " pooling kernel ",
                                    geometry.kernel_height, "x", geometry.kernel_width, " stride ", geometry.stride, " padding ",
                                    geometry.padding, " on ", geometry.batch, "x", geometry.in_height, "x",
                                    geometry.in_width, "x", geometry.channels),
                     __FILE__, __LINE__);
  }
}

std::size_t Poolings::workspace_bytes(const PoolingGeometry& geometry) {
  return primitives(geometry).workspace_bytes;
}

void Poolings::forward(const PoolingGeometry& geometry, const float* input, float* output, void* workspace) {
  Primitives& primitives = this->primitives(geometry);
  primitives.input.set_data_handle(mutable_pointer(input));
  primitives.output.set_data_handle(output);
  if (primitives.workspace_bytes && !workspace) {
    context_.bind_scratchpad(primitives.inference_scratchpad);
    primitives.inference.execute(context_.stream, primitives.inference_arguments);
    return;
  }
  if (primitives.workspace_bytes) primitives.workspace.set_data_handle(workspace);
  context_.bind_scratchpad(primitives.forward_scratchpad);
  primitives.forward.execute(context_.stream, primitives.forward_arguments);
}

void Poolings::backward(const PoolingGeometry& geometry, const float* grad_output, const void* workspace,
                        float* grad_input) {
  Primitives& primitives = this->primitives(geometry);
  PHALANX_CHECK(primitives.workspace_bytes == 0 || workspace != nullptr, "max pooling needs its workspace");
  primitives.grad_output.set_data_handle(mutable_pointer(grad_output));
  primitives.grad_input.set_data_handle(grad_input);
  if (primitives.workspace_bytes) primitives.workspace.set_data_handle(mutable_pointer(workspace));
  context_.bind_scratchpad(primitives.backward_scratchpad);
  primitives.backward.execute(context_.stream, primitives.backward_arguments);
}

}  // namespace phalanx::backend::cpu
