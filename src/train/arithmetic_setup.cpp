// apply_arithmetic (see arithmetic_setup.hpp): one place where a rank's backend takes the run's
// precision, activation storage and determinism, so training and the probes cannot drift apart.
#include "phalanx/train/arithmetic_setup.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::train {

Arithmetic resolve_arithmetic(const config::TrainConfig& train, const backend::Backend& backend,
                              int micro_batches) {
  Arithmetic arithmetic{train.precision, train.activation_dtype, {}};
  if (arithmetic.precision == "auto") {
    const backend::PrecisionChoice choice = backend.preferred_precision();
    arithmetic.precision = backend::compute_precision_name(choice.precision);
    arithmetic.precision_reason = choice.reason;
  }
  if (arithmetic.activation_dtype == "auto")
    arithmetic.activation_dtype = micro_batches > 1 ? "fp32" : arithmetic.precision;
  return arithmetic;
}

std::string describe_resolution(const config::TrainConfig& train, const Arithmetic& arithmetic) {
  std::string text;
  if (train.precision == "auto")
    text = "train.precision auto: " + arithmetic.precision +
           (arithmetic.precision_reason.empty() ? "" : " (" + arithmetic.precision_reason + ")");
  if (train.activation_dtype == "auto")
    text += (text.empty() ? "" : ", ") + std::string("train.activation_dtype auto: ") +
            arithmetic.activation_dtype;
  return text;
}

Arithmetic apply_arithmetic(const config::Config& config, backend::Backend& backend, int micro_batches) {
  Arithmetic arithmetic = resolve_arithmetic(config.train, backend, micro_batches);
  PHALANX_REQUIRE_INPUT(arithmetic.precision != "fp16" || backend.device_kind() == DeviceKind::Cuda,
                        "train.precision: fp16 needs a GPU rank (the CUDA backend); CPU ranks train in fp32 "
                        "or bf16");
  backend.set_activation_precision(backend::ComputePrecision::Float32);
  backend.set_compute_precision(backend::compute_precision_from_name(arithmetic.precision));
  // A backend that cannot hold activations so (a CPU without oneDNN bf16 kernels) says why; the
  // message gains the key that asked for it.
  try {
    backend.set_activation_precision(backend::compute_precision_from_name(arithmetic.activation_dtype));
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::InvalidInput) throw;
    if (config.train.activation_dtype != "auto")
      throw_input_error(
          detail::concat("train.activation_dtype: ", config.train.activation_dtype, ": ", error.what()));
    // auto asks for reduced activations only where the backend holds them; where it does not
    // (bf16 named as the precision on a CPU whose oneDNN has no bf16 kernels) they stay fp32.
    backend.set_activation_precision(backend::ComputePrecision::Float32);
    arithmetic.activation_dtype = "fp32";
  }
  backend.set_deterministic(config.train.deterministic);
  return arithmetic;
}

}  // namespace phalanx::train
