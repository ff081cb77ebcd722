// Geometry of the ops: plain structs a backend keys its primitive caches on.
// All activations are NHWC; convolution weights are PyTorch's [out, in / groups, kh, kw];
// linear weights are PyTorch's [out, in].
#pragma once

#include <cstdint>
#include <functional>

namespace phalanx::backend {

// The element-wise activations beside ReLU (which has ops of its own), as torch.nn defines them:
//   Relu6        min(max(x, 0), 6)
//   Sigmoid      1 / (1 + exp(-x))
//   Hardsigmoid  min(max(x + 3, 0), 6) / 6
//   Silu         x * sigmoid(x)                       (swish with beta 1)
//   Hardswish    x * hardsigmoid(x)
//   Gelu         x * (1 + erf(x / sqrt(2))) / 2       (the exact form, torch's default)
//   GeluTanh     x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2   (approximate='tanh')
enum class ActivationKind { Relu6, Sigmoid, Hardsigmoid, Silu, Hardswish, Gelu, GeluTanh };

// Whether an activation's derivative is a function of its output alone, so backward needs only the
// output: Relu6 (1 where 0 < y < 6), Sigmoid (y (1 - y)), Hardsigmoid (1/6 where 0 < y < 1). SiLU,
// Hardswish and GELU are not one-to-one (each has a minimum below zero, reached from two inputs),
// so theirs needs the input.
constexpr bool backward_reads_output(ActivationKind kind) {
  return kind == ActivationKind::Relu6 || kind == ActivationKind::Sigmoid ||
         kind == ActivationKind::Hardsigmoid;
}

// An activation an op applies to its result as it writes it, instead of a pass of its own over
// memory afterwards (a producer and the activation after it fused). It belongs to the forward op
// only: backward ops ignore it. Part of the geometries' equality and hashes, so primitive caches
// keep fused and plain variants apart. Only activations whose backward reads their output fuse:
// a fused producer keeps its activated output and nothing else (its pre-activation values are
// never stored).
enum class FusedActivation { None, Relu, Relu6, Sigmoid, Hardsigmoid };

// The fused form of `kind`, or None where its backward needs the input (see backward_reads_output).
constexpr FusedActivation fused_form(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::Relu6: return FusedActivation::Relu6;
    case ActivationKind::Sigmoid: return FusedActivation::Sigmoid;
    case ActivationKind::Hardsigmoid: return FusedActivation::Hardsigmoid;
    default: return FusedActivation::None;
  }
}

// The activation a fused form applies; only for Relu6, Sigmoid and Hardsigmoid.
constexpr ActivationKind activation_kind(FusedActivation activation) {
  return activation == FusedActivation::Relu6     ? ActivationKind::Relu6
         : activation == FusedActivation::Sigmoid ? ActivationKind::Sigmoid
                                                  : ActivationKind::Hardsigmoid;
}

struct ConvolutionGeometry {
  int batch = 0;
  int in_channels = 0, in_height = 0, in_width = 0;
  int out_channels = 0;
  int kernel_height = 0, kernel_width = 0;
  int stride = 1;
  int padding = 0;
  // As torch.nn.Conv2d: `groups` splits the channels into that many independent convolutions (each
  // out_channels / groups outputs sees in_channels / groups inputs; depthwise when groups equals
  // in_channels), and `dilation` spaces the kernel taps that far apart (1: adjacent).
  int groups = 1;
  int dilation = 1;
  bool has_bias = true;
  FusedActivation activation = FusedActivation::None;

  // The input channels each output channel reads.
  int group_in_channels() const { return in_channels / groups; }
  // The extent of the kernel's taps on the input, dilation included.
  int dilated_kernel_height() const { return dilation * (kernel_height - 1) + 1; }
  int dilated_kernel_width() const { return dilation * (kernel_width - 1) + 1; }
  int out_height() const { return (in_height + 2 * padding - dilated_kernel_height()) / stride + 1; }
  int out_width() const { return (in_width + 2 * padding - dilated_kernel_width()) / stride + 1; }
  // Elements of the input and output activations (the whole batch) and of the weights.
  std::int64_t input_elements() const { return std::int64_t{batch} * in_height * in_width * in_channels; }
  std::int64_t output_elements() const {
    return std::int64_t{batch} * out_height() * out_width() * out_channels;
  }
  std::int64_t weight_elements() const {
    return std::int64_t{out_channels} * group_in_channels() * kernel_height * kernel_width;
  }
  bool operator==(const ConvolutionGeometry&) const = default;
};

// A convolution on square images with a square kernel (most of the ones tests and benchmarks run).
inline ConvolutionGeometry square_convolution(int batch, int in_channels, int size, int out_channels,
                                              int kernel, int stride, int padding, bool has_bias) {
  ConvolutionGeometry geometry;
  geometry.batch = batch;
  geometry.in_channels = in_channels;
  geometry.in_height = geometry.in_width = size;
  geometry.out_channels = out_channels;
  geometry.kernel_height = geometry.kernel_width = kernel;
  geometry.stride = stride;
  geometry.padding = padding;
  geometry.has_bias = has_bias;
  return geometry;
}

enum class PoolingKind { Max, Average };

struct PoolingGeometry {
  int batch = 0;
  int channels = 0, in_height = 0, in_width = 0;
  // Square windows for max/avg pooling; global average pooling covers a whole H x W image, which
  // need not be square (torchvision's models take any input size their strides allow).
  int kernel_height = 2, kernel_width = 2;
  int stride = 2;
  int padding = 0;
  PoolingKind kind = PoolingKind::Max;

  int out_height() const { return (in_height + 2 * padding - kernel_height) / stride + 1; }
  int out_width() const { return (in_width + 2 * padding - kernel_width) / stride + 1; }
  bool operator==(const PoolingGeometry&) const = default;
};

// The 32-bit words of one image's augmentation draws (data::AugmentDraws): shift_y, shift_x, flip,
// cutout_top, cutout_left, erase_top, erase_left, erase_height, erase_width, then
// max_augment_operations auto-augment ops of 7 words each (the AugmentOperation as int32, then its
// 6 float parameters' bits; core/augment_operations.hpp), Identity (all zero) where unused.
inline constexpr int augment_draw_words = 9 + 7 * 4;

// A batch of uint8 NHWC images augmented on the device; `cutout` is the side of the zeroed square
// (0: none). The per-sample crop shifts, flip, cutout corner and erased rectangle come with the call.
// `operations`: whether the draws may hold auto-augment ops (TrivialAugment or RandAugment on);
// without them the input kernel is one gather, with them it runs the ops between the crop and flip
// and the cutout.
struct AugmentGeometry {
  int batch = 0;
  int height = 0, width = 0, channels = 0;
  int cutout = 0;
  bool operations = false;
  bool operator==(const AugmentGeometry&) const = default;
};

// A batch of uint8 HWC images resampled to the training size (Backend::resample_images): image i
// of source_height x source_width is resized bilinearly by its window, resample_window_words
// int32 in this order: top, left, height, width (the box of the source), resized height and width,
// offset y and x (the output's corner in the resized box), as data::ResampleWindow; output image
// i is output_height x output_width. The bytes of data::resample_bilinear, which a CPU rank's
// loader runs, so a GPU rank can upload the stored images and resize them on the device.
inline constexpr int resample_window_words = 8;

struct ResampleGeometry {
  int batch = 0;
  int source_height = 0, source_width = 0, channels = 0;
  int output_height = 0, output_width = 0;
  bool operator==(const ResampleGeometry&) const = default;
};

// Mixup or CutMix of a normalised batch in place (Backend::mix_batch), timm's Mixup in its 'batch'
// mode: sample i is mixed with its partner, sample batch - 1 - i (timm's x.flip(0)). Mixup blends
// whole images, own_weight * own + (1 - own_weight) * partner, rounding each product and the sum
// as torch's x.mul_(lam).add_(x.flip(0).mul_(1 - lam)) does; CutMix copies the partner's rows
// [box_top, box_bottom) x columns [box_left, box_right) over the sample's.
enum class MixKind { Mixup, CutMix };

struct MixGeometry {
  int batch = 0;
  int height = 0, width = 0, channels = 0;
  MixKind kind = MixKind::Mixup;
  float own_weight = 1.0f;          // Mixup: the sample's own share
  float partner_weight = 0.0f;      // Mixup: the partner's share, 1 - own_weight rounded from double
  int box_top = 0, box_bottom = 0;  // CutMix: the pasted rows
  int box_left = 0, box_right = 0;  // CutMix: the pasted columns
  bool operator==(const MixGeometry&) const = default;
};

struct BatchNormGeometry {
  int batch = 0;
  int channels = 0;
  int spatial = 1;  // height * width (1 after a linear layer)
  float epsilon = 1e-5f;
  FusedActivation activation = FusedActivation::None;
  bool operator==(const BatchNormGeometry&) const = default;
};

struct LinearGeometry {
  int batch = 0;
  int in_features = 0;
  int out_features = 0;
  FusedActivation activation = FusedActivation::None;
  bool operator==(const LinearGeometry&) const = default;
};

}  // namespace phalanx::backend
