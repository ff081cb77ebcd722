// Fully connected layers of the CPU backend on oneDNN inner products: input [batch, in], weight
// [out, in] as PyTorch stores it, output [batch, out]; fp32 or bf16 compute, held and run by
// WeightedLayers (weighted_layers.hpp) with the descriptions of linear.cpp.
#pragma once

#include "weighted_layers.hpp"

namespace phalanx::backend::cpu {

using Linears = WeightedLayers<LinearGeometry>;

}  // namespace phalanx::backend::cpu
