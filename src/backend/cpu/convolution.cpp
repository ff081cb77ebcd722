// How the CPU backend describes a convolution to oneDNN (the hooks of WeightedLayers, see
// weighted_layers.hpp): NHWC activations at the op boundary and PyTorch's oihw weights, which go
// to whatever format each primitive picks (format_tag::any) through reorders.
//
// Groups and dilation: PyTorch's grouped weights [out, in / groups, kh, kw] are, byte for byte,
// oneDNN's goihw [groups, out / groups, in / groups, kh, kw], so a grouped layer describes the same
// buffer with five dimensions. oneDNN counts dilation from 0 (taps adjacent), PyTorch from 1.
//
// Activation layout: measured with a standalone oneDNN probe (oneDNN 2.6.3, AMD EPYC with AVX-512,
// OMP_NUM_THREADS=1, batch 64, median of 41 runs; "any" includes the reorders from/to NHWC that the
// op boundary forces):
//                              forward   backward data   backward weights   total
//   conv 1->32 3x3 pad 1, 28x28
//     nhwc                      0.47 ms      3.82 ms          0.59 ms        4.87 ms
//     any (blocked) + reorders  0.49 ms      4.68 ms          0.48 ms        5.65 ms
//   conv 32->64 3x3 pad 1, 14x14
//     nhwc                      4.08 ms      3.70 ms          4.04 ms       11.82 ms
//     any (blocked) + reorders  3.92 ms      4.10 ms          4.67 ms       12.68 ms
// NHWC won by 7-16%: the blocked kernels' small edge never paid for the reorders. So convolutions
// run NHWC with no activation reorders. oneDNN 3 runs NHWC on its brgemm kernels: on an AVX-512 CPU
// with AMX (oneDNN 3.2, ONEDNN_VERBOSE=1) fp32 forward and backward data are brgconv:avx512_core
// (the forward of 1 or 3 input channels jit:avx512_core), backward weights jit:avx512_core. Backward
// data of a 1-input-channel layer is slow in every layout; a first layer needs no input gradient,
// so the model should not ask for it.
//
// All convolutions are direct: oneDNN 3 has no Winograd convolution on CPUs (oneDNN 2's fp32
// Winograd for wide 3x3 layers is gone since 3.0).
//
// bf16 compute (set_precision): the three directions take bf16 operands and accumulate in fp32,
// as torch.autocast does; the forward writes fp32, backward data an fp32 input gradient, backward
// weights fp32 weight and bias gradients. Activations stay fp32 NHWC at the op boundary, so each
// operand is converted on the way in by the same LayoutBridge reorders that change layouts (round
// to nearest even). With NHWC activations all three directions run brgconv on AMX where the CPU
// has it (brgconv_bwd_w for backward weights; a forward whose reduction, input channels x kernel
// area, is under 16 takes the AVX-512 bf16 jit kernel), the AVX-512 bf16 kernels otherwise.
// Measured with a standalone oneDNN probe (oneDNN 2.6.3, AMD EPYC with AVX512_BF16 and no AMX, 1
// thread, batch 128, fwd + bwd data + bwd weights with the conversions from fp32 NHWC, min of 15 on
// a loaded machine): fmnist_cnn's 32->64 on 14x14 75 ms in nhwc against 102 ms with
// format_tag::any (blocked nChw16c, which oneDNN picks for its jit kernels); resnet20's 16->16 on
// 32x32 32 against 54 ms, 3->16 7 against 13 ms. The weights go to what each primitive picks.
//
// bf16 activations (set_storage, train.activation_dtype: bf16) are held as bf16 NHWC at the op
// boundary: the bf16 primitives read them as they are and write the output and the input gradient
// in bf16 (fp32 accumulation, one rounding), so only the weights are converted per call. The
// weight and bias gradients stay fp32. Where the convolution computes in fp32 (no bf16 kernels
// below AVX-512) the bridges widen the activations and round the results instead.
#include "convolution.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::backend::cpu {

namespace {

using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

}  // namespace

LayerOperands layer_operands(const ConvolutionGeometry& geometry, DataType activation_type) {
  LayerOperands operands;
  operands.input =
      dnnl::memory::desc({geometry.batch, geometry.in_channels, geometry.in_height, geometry.in_width},
                         activation_type, Tag::nhwc);
  operands.output =
      dnnl::memory::desc({geometry.batch, geometry.out_channels, geometry.out_height(), geometry.out_width()},
                         activation_type, Tag::nhwc);
  if (geometry.groups == 1) {
    operands.weight = dnnl::memory::desc(
        {geometry.out_channels, geometry.in_channels, geometry.kernel_height, geometry.kernel_width},
        DataType::f32, Tag::oihw);
  } else {
    operands.weight =
        dnnl::memory::desc({geometry.groups, geometry.out_channels / geometry.groups,
                            geometry.group_in_channels(), geometry.kernel_height, geometry.kernel_width},
                           DataType::f32, Tag::goihw);
  }
  if (geometry.has_bias) operands.bias = dnnl::memory::desc({geometry.out_channels}, DataType::f32, Tag::x);
  return operands;
}

std::optional<LayerDescriptors> describe_layer(const ConvolutionGeometry& geometry,
                                               const LayerOperands& operands, DataType operand_type,
                                               DataType result_type, const dnnl::engine& engine) {
  const ActivationDescriptors activations = activation_descriptors(operands, operand_type, result_type);
  const dnnl::memory::desc weight(operands.weight.get_dims(), operand_type, Tag::any);
  const dnnl::memory::desc grad_weight(operands.weight.get_dims(), DataType::f32, Tag::any);
  const dnnl::memory::dims strides{geometry.stride, geometry.stride};
  const dnnl::memory::dims dilates{geometry.dilation - 1, geometry.dilation - 1};
  const dnnl::memory::dims padding{geometry.padding, geometry.padding};
  // PyTorch pads symmetrically; oneDNN wants the right padding that makes the output size
  // come out as PyTorch's floor division, which may be less than `padding` for stride > 1.
  const dnnl::memory::dims padding_right{
      (geometry.out_height() - 1) * geometry.stride + geometry.dilated_kernel_height() - geometry.in_height -
          geometry.padding,
      (geometry.out_width() - 1) * geometry.stride + geometry.dilated_kernel_width() - geometry.in_width -
          geometry.padding};
  constexpr bool allow_empty = true;
  const dnnl::memory::desc bias = operands.bias;  // zero without a bias: oneDNN then adds none
  const auto describe_forward = [=](const dnnl::primitive_attr& attributes) {
    return dnnl::convolution_forward::primitive_desc(
        engine, dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, activations.input,
        weight, bias, activations.output, strides, dilates, padding, padding_right, attributes, allow_empty);
  };
  const dnnl::primitive_attr attributes = DnnlContext::primitive_attributes();
  const dnnl::convolution_forward::primitive_desc forward = describe_forward(attributes);
  if (!forward) return std::nullopt;
  const dnnl::convolution_backward_data::primitive_desc backward_data(
      engine, dnnl::algorithm::convolution_direct, activations.grad_input, weight, activations.grad_output,
      strides, dilates, padding, padding_right, forward, attributes, allow_empty);
  if (!backward_data) return std::nullopt;
  const dnnl::convolution_backward_weights::primitive_desc backward_weights(
      engine, dnnl::algorithm::convolution_direct, activations.input, grad_weight, bias,
      activations.grad_output, strides, dilates, padding, padding_right, forward, attributes, allow_empty);
  if (!backward_weights) return std::nullopt;
  return LayerDescriptors{forward, backward_data, backward_weights, describe_forward};
}

std::string layer_name(const ConvolutionGeometry& geometry) {
  return detail::concat(
      "convolution ", geometry.in_channels, "->", geometry.out_channels, " kernel ", geometry.kernel_height,
      "x", geometry.kernel_width, " on ", geometry.batch, "x", geometry.in_height, "x", geometry.in_width,
      " stride ", geometry.stride, " padding ", geometry.padding, geometry.groups == 1 ? "" : " groups ",
      geometry.groups == 1 ? "" : std::to_string(geometry.groups), geometry.dilation == 1 ? "" : " dilation ",
      geometry.dilation == 1 ? "" : std::to_string(geometry.dilation));
}

}  // namespace phalanx::backend::cpu
