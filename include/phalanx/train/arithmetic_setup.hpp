// The arithmetic a run asks of its backend (train.precision, train.activation_dtype,
// train.deterministic), set the same way for training and for the start-up probes, which measure
// memory and speed of exactly the steps training will take.
#pragma once

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::train {

// Refuses fp16 on a CPU rank, and activations the backend cannot hold (bf16 on a CPU without
// oneDNN bf16 kernels), as bad input naming the key. Sets the
// activations back to fp32 first: a backend reused by the next trial of a sweep may hold them in
// the previous trial's precision, and the compute precision changes only under fp32 activations.
void apply_arithmetic(const config::Config& config, backend::Backend& backend);

}  // namespace phalanx::train
