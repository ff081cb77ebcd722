// Convolutions on oneDNN with NHWC activations at the op boundary and PyTorch's oihw weights,
// which go to whatever format each primitive picks (format_tag::any) through reorders.
//
// Activation layout for direct convolution, measured with a standalone oneDNN probe (oneDNN
// 2.6.3, AMD EPYC with AVX-512, OMP_NUM_THREADS=1, batch 64, median of 41 runs; "any" includes
// the reorders from/to NHWC that the op boundary forces):
//                              forward   backward data   backward weights   total
//   conv 1->32 3x3 pad 1, 28x28
//     nhwc                      0.47 ms      3.82 ms          0.59 ms        4.87 ms
//     any (blocked) + reorders  0.49 ms      4.68 ms          0.48 ms        5.65 ms
//   conv 32->64 3x3 pad 1, 14x14
//     nhwc                      4.08 ms      3.70 ms          4.04 ms       11.82 ms
//     any (blocked) + reorders  3.92 ms      4.10 ms          4.67 ms       12.68 ms
// NHWC wins by 7-16%: oneDNN 2.6 has native NHWC kernels (brgconv forward, jit backward) and
// the blocked kernels' small edge never pays for the reorders. So direct convolutions run NHWC
// with no activation reorders. Backward data of the 1-input-channel layer is slow in every
// layout; a first layer needs no input gradient, so the model should not ask for it.
//
// Winograd F(4x4, 3x3) does about half the multiplies, but only in blocked layouts. The same
// probe, whole layer (fwd + bwd data + bwd weights), direct NHWC -> Winograd with reorders:
//   32->64 on 14x14 11.5 -> 8.4 ms     64->32 on 14x14 12.0 -> 9.3 ms
//   32->32 on 16x16  7.5 -> 4.8 ms     64->64 on  8x8   7.0 -> 3.7 ms
//   16->16 on 32x32  9.1 -> 10.3 ms     3->16 on 32x32  4.0 -> 9.7 ms    1->32 on 28x28 4.9 -> 8.5 ms
// So Winograd (with activation reorders) for 3x3 stride-1 layers with at least 32 channels in
// and out, where oneDNN implements it (AVX-512), direct NHWC otherwise. A fixed rule rather
// than timing at run time, which would make results depend on machine load. Winograd results
// differ from direct ones by a few 1e-5 relative (measured max 2.3e-5 on 32->64).
//
// bf16 compute (set_precision): the three directions take bf16 operands and accumulate in fp32,
// as torch.autocast does; the forward writes fp32, backward data an fp32 input gradient, backward
// weights fp32 weight and bias gradients. Activations stay fp32 NHWC at the op boundary, so each
// operand is converted on the way in by the same LayoutBridge reorders that change layouts (round
// to nearest even). oneDNN has no bf16 Winograd; bf16 is always direct, with NHWC activations:
// forward then runs brgconv (on AMX where the CPU has it, its AVX-512 bf16 kernel otherwise) and
// the backward directions oneDNN's NHWC jit kernels. Measured with a standalone oneDNN probe
// (oneDNN 2.6.3, AMD EPYC with AVX512_BF16 and no AMX, 1 thread, batch 128, fwd + bwd data + bwd
// weights with the conversions from fp32 NHWC, min of 15 on a loaded machine): fmnist_cnn's
// 32->64 on 14x14 75 ms in nhwc against 102 ms with format_tag::any (blocked nChw16c, which
// oneDNN picks for its jit kernels) and 135 ms for fp32 Winograd; resnet20's 16->16 on 32x32 32
// against 54 ms (fp32 direct 66 ms), 3->16 7 against 13 ms. The weights go to what each primitive
// picks.
//
// bf16 activations (set_storage, train.activation_dtype: bf16) are held as bf16 NHWC at the op
// boundary: the bf16 primitives read them as they are and write the output and the input gradient
// in bf16 (fp32 accumulation, one rounding), so only the weights are converted per call. The
// weight and bias gradients stay fp32. Where the convolution computes in fp32 (no bf16 kernels
// below AVX-512) the bridges widen the activations and round the results instead.
#include "convolution.hpp"

#include <optional>
#include <string>

#include "elementwise.hpp"
#include "phalanx/core/error.hpp"
#include "relu_post_op.hpp"

namespace phalanx::backend::cpu {

namespace {

using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

dnnl::memory::desc activation_descriptor(int batch, int channels, int height, int width, DataType type) {
  return dnnl::memory::desc({batch, channels, height, width}, type, Tag::nhwc);
}

// The measured rule of the header: Winograd pays from 32 channels on both sides (fp32 only).
bool prefers_winograd(const ConvolutionGeometry& geometry, ComputePrecision precision) {
  return precision == ComputePrecision::Float32 && geometry.kernel_height == 3 && geometry.kernel_width == 3 &&
         geometry.stride == 1 && geometry.in_channels >= 32 && geometry.out_channels >= 32;
}

}  // namespace

struct Convolutions::Primitives {
  Primitives(const ConvolutionGeometry& geometry, DnnlContext& context, ComputePrecision precision,
             ComputePrecision storage);

  // Caller-layout views (no buffers): each call binds the caller's pointers to them.
  dnnl::memory input, output, weight, bias, grad_output, grad_input, grad_weight, grad_bias;
  // Receives the bias gradient when a caller with a bias passes no grad_bias.
  std::optional<dnnl::memory> discarded_grad_bias;

  dnnl::convolution_forward forward;
  LayoutBridge input_for_forward, weight_for_forward, output_from_forward;
  dnnl::memory forward_scratchpad;
  std::unordered_map<int, dnnl::memory> forward_arguments;

  // The forward with the ReLU after it as a oneDNN post-op (see forward_with_relu).
  std::optional<dnnl::convolution_forward::desc> forward_operation;
  dnnl::convolution_forward::primitive_desc forward_primitive_descriptor;
  bool forward_with_relu_tried = false;
  std::optional<dnnl::convolution_forward> forward_relu;
  dnnl::memory forward_relu_scratchpad;
  std::unordered_map<int, dnnl::memory> forward_relu_arguments;
  dnnl::convolution_forward* forward_with_relu(DnnlContext& context);

  dnnl::convolution_backward_data backward_data;
  LayoutBridge grad_output_for_backward_data, weight_for_backward_data, grad_input_from_backward_data;
  dnnl::memory backward_data_scratchpad;
  std::unordered_map<int, dnnl::memory> backward_data_arguments;

  dnnl::convolution_backward_weights backward_weights;
  LayoutBridge input_for_backward_weights, grad_output_for_backward_weights,
      grad_weight_from_backward_weights;
  dnnl::memory backward_weights_scratchpad;
  std::unordered_map<int, dnnl::memory> backward_weights_arguments;
};

namespace {

// The three primitive descriptors of one convolution, all with the same algorithm.
struct ConvolutionDescriptors {
  std::optional<dnnl::convolution_forward::desc> forward_operation;
  dnnl::convolution_forward::primitive_desc forward;
  dnnl::convolution_backward_data::primitive_desc backward_data;
  dnnl::convolution_backward_weights::primitive_desc backward_weights;
};

// Describes the convolution with `algorithm` and activations in `activation_tag` (nhwc, or any
// to let the primitives choose). `operand_type` is what the primitives read (f32, or bf16 for
// bf16 compute); `result_type` what they write as output and input gradient (f32, or bf16 under
// bf16 activations); weight gradients are always f32. Returns nothing when the algorithm has no
// implementation here.
std::optional<ConvolutionDescriptors> describe(const ConvolutionGeometry& geometry, dnnl::algorithm algorithm,
                                               Tag activation_tag, DataType operand_type,
                                               DataType result_type, const dnnl::engine& engine) {
  const dnnl::memory::dims input_dims{geometry.batch, geometry.in_channels, geometry.in_height,
                                      geometry.in_width};
  const dnnl::memory::dims output_dims{geometry.batch, geometry.out_channels, geometry.out_height(),
                                       geometry.out_width()};
  const dnnl::memory::dims weight_dims{geometry.out_channels, geometry.in_channels, geometry.kernel_height,
                                       geometry.kernel_width};
  const dnnl::memory::desc input_descriptor(input_dims, operand_type, activation_tag);
  const dnnl::memory::desc output_descriptor(output_dims, result_type, activation_tag);
  const dnnl::memory::desc weight_descriptor(weight_dims, operand_type, Tag::any);
  const dnnl::memory::desc grad_input_descriptor(input_dims, result_type, activation_tag);
  const dnnl::memory::desc grad_output_descriptor(output_dims, operand_type, activation_tag);
  const dnnl::memory::desc grad_weight_descriptor(weight_dims, DataType::f32, Tag::any);
  const dnnl::memory::desc bias_descriptor({geometry.out_channels}, DataType::f32, Tag::x);
  const dnnl::memory::dims strides{geometry.stride, geometry.stride};
  const dnnl::memory::dims padding{geometry.padding, geometry.padding};
  // PyTorch pads symmetrically; oneDNN wants the right padding that makes the output size
  // come out as PyTorch's floor division, which may be less than `padding` for stride > 1.
  const dnnl::memory::dims padding_right{(geometry.out_height() - 1) * geometry.stride +
                                             geometry.kernel_height - geometry.in_height - geometry.padding,
                                         (geometry.out_width() - 1) * geometry.stride +
                                             geometry.kernel_width - geometry.in_width - geometry.padding};
  const dnnl::primitive_attr attributes = DnnlContext::primitive_attributes();
  constexpr bool allow_empty = true;

  const auto forward_descriptor =
      geometry.has_bias
          ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm, input_descriptor,
                                            weight_descriptor, bias_descriptor, output_descriptor, strides,
                                            padding, padding_right)
          : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm, input_descriptor,
                                            weight_descriptor, output_descriptor, strides, padding,
                                            padding_right);
  ConvolutionDescriptors descriptors;
  descriptors.forward_operation = forward_descriptor;
  descriptors.forward =
      dnnl::convolution_forward::primitive_desc(forward_descriptor, attributes, engine, allow_empty);
  if (!descriptors.forward) return std::nullopt;

  const dnnl::convolution_backward_data::desc backward_data_descriptor(
      algorithm, grad_input_descriptor, weight_descriptor, grad_output_descriptor, strides, padding,
      padding_right);
  descriptors.backward_data = dnnl::convolution_backward_data::primitive_desc(
      backward_data_descriptor, attributes, engine, descriptors.forward, allow_empty);
  if (!descriptors.backward_data) return std::nullopt;

  const auto backward_weights_descriptor =
      geometry.has_bias
          ? dnnl::convolution_backward_weights::desc(algorithm, input_descriptor, grad_weight_descriptor,
                                                     bias_descriptor, grad_output_descriptor, strides,
                                                     padding, padding_right)
          : dnnl::convolution_backward_weights::desc(algorithm, input_descriptor, grad_weight_descriptor,
                                                     grad_output_descriptor, strides, padding,
                                                     padding_right);
  descriptors.backward_weights = dnnl::convolution_backward_weights::primitive_desc(
      backward_weights_descriptor, attributes, engine, descriptors.forward, allow_empty);
  if (!descriptors.backward_weights) return std::nullopt;
  return descriptors;
}

}  // namespace

Convolutions::Primitives::Primitives(const ConvolutionGeometry& geometry, DnnlContext& context,
                                     ComputePrecision precision, ComputePrecision storage) {
  const DataType activation_type = storage == ComputePrecision::BFloat16 ? DataType::bf16 : DataType::f32;
  const auto input_descriptor = activation_descriptor(geometry.batch, geometry.in_channels,
                                                      geometry.in_height, geometry.in_width, activation_type);
  const auto output_descriptor = activation_descriptor(
      geometry.batch, geometry.out_channels, geometry.out_height(), geometry.out_width(), activation_type);
  const dnnl::memory::desc weight_descriptor(
      {geometry.out_channels, geometry.in_channels, geometry.kernel_height, geometry.kernel_width},
      DataType::f32, Tag::oihw);
  const dnnl::memory::desc bias_descriptor({geometry.out_channels}, DataType::f32, Tag::x);

  input = context.unbound_memory(input_descriptor);
  grad_input = context.unbound_memory(input_descriptor);
  output = context.unbound_memory(output_descriptor);
  grad_output = context.unbound_memory(output_descriptor);
  weight = context.unbound_memory(weight_descriptor);
  grad_weight = context.unbound_memory(weight_descriptor);
  if (geometry.has_bias) {
    bias = context.unbound_memory(bias_descriptor);
    grad_bias = context.unbound_memory(bias_descriptor);
    discarded_grad_bias.emplace(bias_descriptor, context.engine);
  }

  std::optional<ConvolutionDescriptors> descriptors;
  if (prefers_winograd(geometry, precision))
    descriptors = describe(geometry, dnnl::algorithm::convolution_winograd, Tag::any, DataType::f32,
                           DataType::f32, context.engine);
  // A shape oneDNN had no bf16 convolution for (none of the presets' shapes on AVX-512) would
  // widen to fp32 below, as the CUDA backend widens one cuDNN has no bf16 algorithm for.
  if (!descriptors && precision == ComputePrecision::BFloat16)
    descriptors = describe(geometry, dnnl::algorithm::convolution_direct, Tag::nhwc, DataType::bf16,
                           activation_type, context.engine);
  if (!descriptors)
    descriptors = describe(geometry, dnnl::algorithm::convolution_direct, Tag::nhwc, DataType::f32,
                           DataType::f32, context.engine);
  PHALANX_CHECK(descriptors.has_value(), "oneDNN has no direct convolution for this geometry");

  const auto& forward_primitive = descriptors->forward;
  forward_operation = descriptors->forward_operation;
  forward_primitive_descriptor = forward_primitive;
  forward = dnnl::convolution_forward(forward_primitive);
  input_for_forward = LayoutBridge::into(input, forward_primitive.src_desc());
  weight_for_forward = LayoutBridge::into(weight, forward_primitive.weights_desc());
  output_from_forward = LayoutBridge::out_of(output, forward_primitive.dst_desc());
  context.reserve_transient({&input_for_forward, &weight_for_forward, &output_from_forward});
  forward_scratchpad = context.scratchpad_memory(forward_primitive);
  forward_arguments = {{DNNL_ARG_SRC, input_for_forward.internal},
                       {DNNL_ARG_WEIGHTS, weight_for_forward.internal},
                       {DNNL_ARG_DST, output_from_forward.internal},
                       {DNNL_ARG_SCRATCHPAD, forward_scratchpad}};
  if (geometry.has_bias) forward_arguments.emplace(DNNL_ARG_BIAS, bias);

  const auto& backward_data_primitive = descriptors->backward_data;
  backward_data = dnnl::convolution_backward_data(backward_data_primitive);
  grad_output_for_backward_data = LayoutBridge::into(grad_output, backward_data_primitive.diff_dst_desc());
  weight_for_backward_data = LayoutBridge::into(weight, backward_data_primitive.weights_desc());
  grad_input_from_backward_data = LayoutBridge::out_of(grad_input, backward_data_primitive.diff_src_desc());
  context.reserve_transient(
      {&grad_output_for_backward_data, &weight_for_backward_data, &grad_input_from_backward_data});
  backward_data_scratchpad = context.scratchpad_memory(backward_data_primitive);
  backward_data_arguments = {{DNNL_ARG_DIFF_DST, grad_output_for_backward_data.internal},
                             {DNNL_ARG_WEIGHTS, weight_for_backward_data.internal},
                             {DNNL_ARG_DIFF_SRC, grad_input_from_backward_data.internal},
                             {DNNL_ARG_SCRATCHPAD, backward_data_scratchpad}};

  const auto& backward_weights_primitive = descriptors->backward_weights;
  backward_weights = dnnl::convolution_backward_weights(backward_weights_primitive);
  input_for_backward_weights = LayoutBridge::into(input, backward_weights_primitive.src_desc());
  grad_output_for_backward_weights =
      LayoutBridge::into(grad_output, backward_weights_primitive.diff_dst_desc());
  grad_weight_from_backward_weights =
      LayoutBridge::out_of(grad_weight, backward_weights_primitive.diff_weights_desc());
  context.reserve_transient(
      {&input_for_backward_weights, &grad_output_for_backward_weights, &grad_weight_from_backward_weights});
  backward_weights_scratchpad = context.scratchpad_memory(backward_weights_primitive);
  backward_weights_arguments = {{DNNL_ARG_SRC, input_for_backward_weights.internal},
                                {DNNL_ARG_DIFF_DST, grad_output_for_backward_weights.internal},
                                {DNNL_ARG_DIFF_WEIGHTS, grad_weight_from_backward_weights.internal},
                                {DNNL_ARG_SCRATCHPAD, backward_weights_scratchpad}};
  if (geometry.has_bias) backward_weights_arguments.emplace(DNNL_ARG_DIFF_BIAS, grad_bias);
  // In bf16 Convolutions::backward binds all five at once.
  if (precision == ComputePrecision::BFloat16)
    context.reserve_transient({&input_for_backward_weights, &grad_output_for_backward_weights,
                               &grad_weight_from_backward_weights, &weight_for_backward_data,
                               &grad_input_from_backward_data});
}

// Made on the first fused call, and only when oneDNN picks the very implementation and layouts of
// the plain forward for it: the same kernel with max(x, 0) applied in its epilogue, so fused
// results are the plain ones bit for bit (NaN aside, see backend.hpp). Otherwise (null) the
// caller runs the plain forward and relu_forward in place.
//
// Not for Winograd: its post-op kernel is slower than the plain one plus the ReLU pass
// (fmnist_cnn's conv2, 32->64 on 14x14, batch 64, 1 thread, interleaved medians of 15: 3.22 ms
// fused against 2.82 ms; the direct NHWC conv1 gains, 0.49 against 0.59 ms).
dnnl::convolution_forward* Convolutions::Primitives::forward_with_relu(DnnlContext& context) {
  const auto& plain = forward_primitive_descriptor;
  if (forward_with_relu_tried) return forward_relu ? &*forward_relu : nullptr;
  forward_with_relu_tried = true;
  if (std::string(plain.impl_info_str()).find("wino") != std::string::npos) return nullptr;
  const auto fused = relu_post_op_descriptor(*forward_operation, plain, context.engine);
  if (!fused) return nullptr;
  forward_relu = dnnl::convolution_forward(*fused);
  forward_relu_scratchpad = context.scratchpad_memory(*fused);
  forward_relu_arguments = forward_arguments;
  forward_relu_arguments[DNNL_ARG_SCRATCHPAD] = forward_relu_scratchpad;
  return &*forward_relu;
}

Convolutions::Convolutions(DnnlContext& context) : context_(context) {}
Convolutions::~Convolutions() = default;

void Convolutions::set_storage(ComputePrecision precision) {
  PHALANX_CHECK(precision == ComputePrecision::Float32 || precision == ComputePrecision::BFloat16,
                "the CPU convolutions hold activations in fp32 or bf16");
  storage_ = precision;
}

void Convolutions::set_precision(ComputePrecision precision) {
  PHALANX_CHECK(precision == ComputePrecision::Float32 || precision == ComputePrecision::BFloat16,
                "the CPU convolutions compute in fp32 or bf16");
  precision_ = precision;
}

Convolutions::Primitives& Convolutions::primitives(const ConvolutionGeometry& geometry) {
  // One entry per shape: the fused forward lives beside the plain one (backward ignores the
  // activation), so a fused layer builds no second set of backward primitives.
  ConvolutionGeometry shape = geometry;
  shape.activation = FusedActivation::None;
  try {
    return cache_.find_or_create_with(precision_, storage_, shape, context_, precision_, storage_);
  } catch (const dnnl::error& error) {
    throw_dnnl_error(error,
                     detail::concat("create ", precision_ == ComputePrecision::BFloat16 ? "bf16 " : "",
                                    "convolution ", geometry.in_channels, "->", geometry.out_channels,
                                    " kernel ", geometry.kernel_height, "x", geometry.kernel_width, " on ",
                                    geometry.batch, "x", geometry.in_height, "x", geometry.in_width,
                                    " stride ", geometry.stride, " padding ", geometry.padding),
                     __FILE__, __LINE__);
  }
}

void Convolutions::forward(const ConvolutionGeometry& geometry, const float* input, const float* weight,
                           const float* bias, float* output) {
  PHALANX_CHECK(!geometry.has_bias || bias != nullptr, "convolution with a bias needs its bias");
  Primitives& primitives = this->primitives(geometry);
  dnnl::convolution_forward* with_relu = nullptr;
  if (geometry.activation == FusedActivation::Relu) {
    try {
      with_relu = primitives.forward_with_relu(context_);
    } catch (const dnnl::error& error) {
      throw_dnnl_error(error, "create convolution forward with ReLU", __FILE__, __LINE__);
    }
  }
  primitives.input.set_data_handle(mutable_pointer(input));
  primitives.weight.set_data_handle(mutable_pointer(weight));
  if (geometry.has_bias) primitives.bias.set_data_handle(mutable_pointer(bias));
  primitives.output.set_data_handle(output);
  context_.bind_scratchpad(with_relu ? primitives.forward_relu_scratchpad : primitives.forward_scratchpad);
  context_.bind_transient(
      {&primitives.input_for_forward, &primitives.weight_for_forward, &primitives.output_from_forward});
  primitives.input_for_forward.run(context_.stream);
  primitives.weight_for_forward.run(context_.stream);
  if (with_relu)
    with_relu->execute(context_.stream, primitives.forward_relu_arguments);
  else
    primitives.forward.execute(context_.stream, primitives.forward_arguments);
  primitives.output_from_forward.run(context_.stream);
  if (geometry.activation == FusedActivation::Relu && !with_relu) {
    const std::int64_t count = static_cast<std::int64_t>(geometry.batch) * geometry.out_channels *
                               geometry.out_height() * geometry.out_width();
    if (storage_ == ComputePrecision::BFloat16)
      relu_forward(count, as_bf16(output), as_bf16(output));
    else
      relu_forward(count, output, output);
  }
}

void Convolutions::backward_data(const ConvolutionGeometry& geometry, const float* grad_output,
                                 const float* weight, float* grad_input) {
  Primitives& primitives = this->primitives(geometry);
  primitives.grad_output.set_data_handle(mutable_pointer(grad_output));
  primitives.weight.set_data_handle(mutable_pointer(weight));
  primitives.grad_input.set_data_handle(grad_input);
  context_.bind_scratchpad(primitives.backward_data_scratchpad);
  context_.bind_transient({&primitives.grad_output_for_backward_data, &primitives.weight_for_backward_data,
                           &primitives.grad_input_from_backward_data});
  primitives.grad_output_for_backward_data.run(context_.stream);
  primitives.weight_for_backward_data.run(context_.stream);
  primitives.backward_data.execute(context_.stream, primitives.backward_data_arguments);
  primitives.grad_input_from_backward_data.run(context_.stream);
}

void Convolutions::backward(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                            const float* weight, float* grad_input, float* grad_weight, float* grad_bias) {
  Primitives& primitives = this->primitives(geometry);
  // In bf16 both directions convert grad_output to the same bf16 layout: once is enough. fp32
  // (and any case where the two layouts differ) runs the two directions as they are.
  const bool share = precision_ == ComputePrecision::BFloat16 && grad_input != nullptr &&
                     primitives.grad_output_for_backward_weights.reorder &&
                     primitives.grad_output_for_backward_data.reorder &&
                     primitives.grad_output_for_backward_weights.internal.get_desc() ==
                         primitives.grad_output_for_backward_data.internal.get_desc();
  if (!share) {
    backward_weights(geometry, input, grad_output, grad_weight, grad_bias);
    if (grad_input) backward_data(geometry, grad_output, weight, grad_input);
    return;
  }
  primitives.input.set_data_handle(mutable_pointer(input));
  primitives.grad_output.set_data_handle(mutable_pointer(grad_output));
  primitives.grad_weight.set_data_handle(grad_weight);
  if (geometry.has_bias)
    primitives.grad_bias.set_data_handle(grad_bias ? static_cast<void*>(grad_bias)
                                                   : primitives.discarded_grad_bias->get_data_handle());
  primitives.weight.set_data_handle(mutable_pointer(weight));
  primitives.grad_input.set_data_handle(grad_input);
  context_.bind_transient({&primitives.input_for_backward_weights, &primitives.grad_output_for_backward_weights,
                           &primitives.grad_weight_from_backward_weights, &primitives.weight_for_backward_data,
                           &primitives.grad_input_from_backward_data});
  primitives.grad_output_for_backward_data.internal.set_data_handle(
      primitives.grad_output_for_backward_weights.internal.get_data_handle());
  primitives.input_for_backward_weights.run(context_.stream);
  primitives.grad_output_for_backward_weights.run(context_.stream);
  context_.bind_scratchpad(primitives.backward_weights_scratchpad);
  primitives.backward_weights.execute(context_.stream, primitives.backward_weights_arguments);
  primitives.grad_weight_from_backward_weights.run(context_.stream);
  primitives.weight_for_backward_data.run(context_.stream);
  context_.bind_scratchpad(primitives.backward_data_scratchpad);
  primitives.backward_data.execute(context_.stream, primitives.backward_data_arguments);
  primitives.grad_input_from_backward_data.run(context_.stream);
}

void Convolutions::backward_weights(const ConvolutionGeometry& geometry, const float* input,
                                    const float* grad_output, float* grad_weight, float* grad_bias) {
  Primitives& primitives = this->primitives(geometry);
  primitives.input.set_data_handle(mutable_pointer(input));
  primitives.grad_output.set_data_handle(mutable_pointer(grad_output));
  primitives.grad_weight.set_data_handle(grad_weight);
  if (geometry.has_bias)
    primitives.grad_bias.set_data_handle(grad_bias ? static_cast<void*>(grad_bias)
                                                   : primitives.discarded_grad_bias->get_data_handle());
  context_.bind_scratchpad(primitives.backward_weights_scratchpad);
  context_.bind_transient({&primitives.input_for_backward_weights,
                           &primitives.grad_output_for_backward_weights,
                           &primitives.grad_weight_from_backward_weights});
  primitives.input_for_backward_weights.run(context_.stream);
  primitives.grad_output_for_backward_weights.run(context_.stream);
  primitives.backward_weights.execute(context_.stream, primitives.backward_weights_arguments);
  primitives.grad_weight_from_backward_weights.run(context_.stream);
}

}  // namespace phalanx::backend::cpu
