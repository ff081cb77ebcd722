// The arithmetic a run asks of its backend (train.precision, train.activation_dtype,
// train.deterministic), set the same way for training and for the start-up probes, which measure
// memory and speed of exactly the steps training will take.
#pragma once

#include <string>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::train {

// A rank's train.precision and train.activation_dtype with `auto` resolved: always fp32, bf16 or
// fp16. Each rank resolves for its own backend, so a job whose ranks differ (a CPU with bf16
// instructions and one without, CPU and GPU ranks) computes in each rank's best precision; the
// gradients they sum and the weights they share are fp32 either way.
struct Arithmetic {
  config::Precision precision = config::Precision::Fp32;  // never Auto
  config::Precision activation_dtype = config::Precision::Fp32;
  std::string precision_reason;  // why auto chose `precision` here (Backend::preferred_precision)
};

// The backend's precision of a resolved config precision (fp32, bf16 or fp16), and back.
backend::ComputePrecision compute_precision(config::Precision precision);
config::Precision config_precision(backend::ComputePrecision precision);

// precision auto: the backend's preferred_precision. activation_dtype auto: the compute precision
// itself (the two-byte activations that make bf16 pay off), unless the step is split into
// micro-batches, which slice and sum in fp32 elements, the compute precision is fp32, or the
// backend cannot hold activations in it (Backend::can_hold_activations; a CPU without oneDNN bf16
// kernels). `micro_batches`: the rank's micro-batches per step (micro_batches_per_step). Changes
// nothing on the backend.
Arithmetic resolve_arithmetic(const config::TrainConfig& train, const backend::Backend& backend,
                              int micro_batches);

// What `auto` became on this rank and why, for its line at the start of a run ("train.precision
// auto: bf16 (AMX tiles), train.activation_dtype auto: bf16"); empty when neither key is auto.
std::string describe_resolution(const config::TrainConfig& train, const Arithmetic& arithmetic);

// Sets the resolved arithmetic (resolve_arithmetic) and train.deterministic on the backend and
// returns it. Refuses fp16 on a CPU rank, and activations named outright that the backend cannot
// hold (bf16 on a CPU without oneDNN bf16 kernels), as bad input naming the key, leaving the
// backend as it was. Sets the activations back to fp32 first: a backend reused by the next trial of
// a sweep may hold them in the previous trial's precision, and the compute precision changes only
// under fp32 activations.
Arithmetic apply_arithmetic(const config::Config& config, backend::Backend& backend, int micro_batches = 1);

}  // namespace phalanx::train
