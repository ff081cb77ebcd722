// Convolutions of the CPU backend on oneDNN: forward, backward data and backward weights (+ bias)
// for NHWC activations and PyTorch's oihw weights, in fp32 or bf16 compute, held and run by
// WeightedLayers (weighted_layers.hpp) with the descriptions of convolution.cpp.
#pragma once

#include "weighted_layers.hpp"

namespace phalanx::backend::cpu {

using Convolutions = WeightedLayers<ConvolutionGeometry>;

}  // namespace phalanx::backend::cpu
