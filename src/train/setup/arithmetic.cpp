// apply_arithmetic (see phalanx/train/arithmetic.hpp): one place where a rank's backend takes the run's
// precision, activation storage and determinism, so training and the probes cannot drift apart.
#include "phalanx/train/arithmetic.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::train {

using config::Precision;

backend::ComputePrecision compute_precision(Precision precision) {
  switch (precision) {
    case Precision::Bf16: return backend::ComputePrecision::BFloat16;
    case Precision::Fp16: return backend::ComputePrecision::Float16;
    case Precision::Fp32: return backend::ComputePrecision::Float32;
    case Precision::Auto: break;
  }
  PHALANX_CHECK(false, "precision auto is resolved before the backend sees it");
  return backend::ComputePrecision::Float32;
}

Precision config_precision(backend::ComputePrecision precision) {
  switch (precision) {
    case backend::ComputePrecision::BFloat16: return Precision::Bf16;
    case backend::ComputePrecision::Float16: return Precision::Fp16;
    case backend::ComputePrecision::Float32: break;
  }
  return Precision::Fp32;
}

Arithmetic resolve_arithmetic(const config::TrainConfig& train, const backend::Backend& backend,
                              int micro_batches) {
  Arithmetic arithmetic{train.precision, train.activation_dtype, {}};
  if (arithmetic.precision == Precision::Auto) {
    const backend::PrecisionChoice choice = backend.preferred_precision();
    arithmetic.precision = config_precision(choice.precision);
    arithmetic.precision_reason = choice.reason;
  }
  if (arithmetic.activation_dtype == Precision::Auto) {
    // Reduced activations only where the backend holds them (not on a CPU whose oneDNN has no bf16
    // kernels, even with bf16 named as the precision): the backend is asked, nothing is tried.
    const backend::ComputePrecision compute = compute_precision(arithmetic.precision);
    const bool reduced = micro_batches <= 1 && compute != backend::ComputePrecision::Float32 &&
                         backend.can_hold_activations(compute, compute);
    arithmetic.activation_dtype = reduced ? arithmetic.precision : Precision::Fp32;
  }
  return arithmetic;
}

std::string describe_resolution(const config::TrainConfig& train, const Arithmetic& arithmetic) {
  std::string text;
  if (train.precision == Precision::Auto)
    text = "train.precision auto: " + config::name_of(arithmetic.precision) +
           (arithmetic.precision_reason.empty() ? "" : " (" + arithmetic.precision_reason + ")");
  if (train.activation_dtype == Precision::Auto)
    text += (text.empty() ? "" : ", ") + std::string("train.activation_dtype auto: ") +
            config::name_of(arithmetic.activation_dtype);
  return text;
}

Arithmetic apply_arithmetic(const config::Config& config, backend::Backend& backend, int micro_batches) {
  const Arithmetic arithmetic = resolve_arithmetic(config.train, backend, micro_batches);
  PHALANX_REQUIRE_INPUT(arithmetic.precision != Precision::Fp16 || backend.device_kind() == DeviceKind::Cuda,
                        "train.precision: fp16 needs a GPU rank (the CUDA backend); CPU ranks train in fp32 "
                        "or bf16");
  const backend::ComputePrecision compute = compute_precision(arithmetic.precision);
  const backend::ComputePrecision activations = compute_precision(arithmetic.activation_dtype);
  // Only a precision named outright can be one the backend cannot hold (auto asked it already):
  // refused with the backend's reason and the key that asked, before the backend changes.
  const std::string refusal = backend.activation_precision_refusal(activations, compute);
  PHALANX_REQUIRE_INPUT(refusal.empty(), "train.activation_dtype: ", config.train.activation_dtype, ": ",
                        refusal);
  backend.set_activation_precision(backend::ComputePrecision::Float32);
  backend.set_compute_precision(compute);
  backend.set_activation_precision(activations);
  backend.set_deterministic(config.train.deterministic);
  return arithmetic;
}

}  // namespace phalanx::train
