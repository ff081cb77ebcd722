// The weight (and bias) gradient of a depthwise convolution on NHWC fp32 activations, the CPU
// backend's own loop instead of oneDNN's. oneDNN 3's kernels for this direction are the slowest op
// of a MobileNet step on CPU ranks (about 10x the depthwise forward at CIFAR sizes; bench/op_profile.py),
// while the work is a channel-vectorised multiply-add over the activations, bound by memory.
#pragma once

#include <vector>

#include "phalanx/backend/geometry.hpp"

namespace phalanx::backend::cpu {

// True for the convolutions depthwise_weight_gradient computes: one input and one output channel
// per group (groups == in_channels == out_channels > 1), any kernel, stride, padding and dilation.
bool is_depthwise(const ConvolutionGeometry& geometry);

// grad_weight [C, 1, KH, KW] (torch's layout) = sum over samples and output positions of
// grad_output x the input under each kernel tap; grad_bias [C] = sum of grad_output (when not null).
// Both are overwritten. Samples are summed in fixed blocks and the blocks in order, so the bits do
// not depend on the thread count. `partial_sums` is the caller's workspace, grown as needed and kept
// between calls (a fresh buffer per call would be mapped and faulted in again every step).
void depthwise_weight_gradient(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                               float* grad_weight, float* grad_bias, std::vector<float>& partial_sums);

}  // namespace phalanx::backend::cpu
