// apply_arithmetic (see arithmetic_setup.hpp): one place where a rank's backend takes the run's
// precision, activation storage and determinism, so training and the probes cannot drift apart.
#include "phalanx/train/arithmetic_setup.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::train {

void apply_arithmetic(const config::Config& config, backend::Backend& backend) {
  PHALANX_REQUIRE_INPUT(config.train.precision != "fp16" || backend.device_kind() == DeviceKind::Cuda,
                        "train.precision: fp16 needs a GPU rank (the CUDA backend); CPU ranks train in fp32 "
                        "or bf16");
  backend.set_activation_precision(backend::ComputePrecision::Float32);
  backend.set_compute_precision(backend::compute_precision_from_name(config.train.precision));
  // A backend that cannot hold activations so (a CPU without oneDNN bf16 kernels) says why; the
  // message gains the key that asked for it.
  try {
    backend.set_activation_precision(backend::compute_precision_from_name(config.train.activation_dtype));
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::InvalidInput) throw;
    throw_input_error(
        detail::concat("train.activation_dtype: ", config.train.activation_dtype, ": ", error.what()));
  }
  backend.set_deterministic(config.train.deterministic);
}

}  // namespace phalanx::train
