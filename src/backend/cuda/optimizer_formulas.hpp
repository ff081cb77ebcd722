// The per-element SGD and AdamW updates of the fused optimizer kernels, written once for the host
// and the device with the CPU backend's operations in the CPU backend's order, each rounded on
// its own (host_device.hpp). Every rank of a data-parallel job applies the all-reduced gradient to
// its own parameter copy, so a GPU rank and a CPU rank keep identical parameters only when their
// steps agree bit for bit; host tests compare these functions with the CPU backend.
#pragma once

#include <cfloat>
#include <cmath>

#include "host_device.hpp"
#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

// A moment or momentum buffer below the smallest normal float is stored as zero, exact zeros
// keeping their sign: the CPU backend's rule (src/backend/cpu/optimizers.cpp says why), kept here
// so that GPU and CPU ranks store the same bits.
PHALANX_HOST_DEVICE inline float flush_subnormal(float value) {
  return (value != 0.0f && value > -FLT_MIN && value < FLT_MIN) ? 0.0f : value;
}

enum class SgdVariant { Plain, Momentum, Nesterov };

inline SgdVariant sgd_variant(const SgdHyperparameters& hyperparameters) {
  if (hyperparameters.momentum == 0.0f) return SgdVariant::Plain;
  return hyperparameters.nesterov ? SgdVariant::Nesterov : SgdVariant::Momentum;
}

// One parameter's SGD step. momentum_buffer is read and written unless the variant is Plain.
PHALANX_HOST_DEVICE inline void sgd_update(SgdVariant variant, float learning_rate, float momentum,
                                           float weight_decay, float& parameter, float gradient,
                                           float& momentum_buffer) {
  // torch.optim.SGD: g + weight_decay * p (L2 decay folded into the gradient).
  const float decayed = rounded_add(gradient, rounded_multiply(weight_decay, parameter));
  if (variant == SgdVariant::Plain) {
    parameter = rounded_subtract(parameter, rounded_multiply(learning_rate, decayed));
    return;
  }
  // The buffer starts at zero, so the first step's momentum * 0 + g equals PyTorch's buf = g.
  const float buffer = flush_subnormal(rounded_add(rounded_multiply(momentum, momentum_buffer), decayed));
  momentum_buffer = buffer;
  const float direction =
      variant == SgdVariant::Nesterov ? rounded_add(decayed, rounded_multiply(momentum, buffer)) : buffer;
  parameter = rounded_subtract(parameter, rounded_multiply(learning_rate, direction));
}

// AdamW's per-step scalars, in double on the host as PyTorch computes its bias corrections.
struct AdamWScalars {
  float beta1, beta2, epsilon;
  float decay_factor;      // 1 - lr * weight_decay (decoupled decay)
  float step_size;         // lr / (1 - beta1^t)
  float sqrt_correction2;  // sqrt(1 - beta2^t)
};

inline AdamWScalars adamw_scalars(const AdamWHyperparameters& hyperparameters) {
  const float learning_rate = hyperparameters.learning_rate;
  const double step = static_cast<double>(hyperparameters.step);
  AdamWScalars scalars{};
  scalars.beta1 = hyperparameters.beta1;
  scalars.beta2 = hyperparameters.beta2;
  scalars.epsilon = hyperparameters.epsilon;
  scalars.decay_factor = 1.0f - learning_rate * hyperparameters.weight_decay;
  scalars.step_size =
      static_cast<float>(learning_rate / (1.0 - std::pow(static_cast<double>(hyperparameters.beta1), step)));
  scalars.sqrt_correction2 =
      static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(hyperparameters.beta2), step)));
  return scalars;
}

// One parameter's AdamW step:
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g g
//   p = p (1 - lr wd) - step_size m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
PHALANX_HOST_DEVICE inline void adamw_update(const AdamWScalars& scalars, float& parameter, float gradient,
                                             float& first_moment, float& second_moment) {
  const float first =
      flush_subnormal(rounded_add(rounded_multiply(scalars.beta1, first_moment),
                                  rounded_multiply(rounded_subtract(1.0f, scalars.beta1), gradient)));
  const float second = flush_subnormal(rounded_add(
      rounded_multiply(scalars.beta2, second_moment),
      rounded_multiply(rounded_multiply(rounded_subtract(1.0f, scalars.beta2), gradient), gradient)));
  first_moment = first;
  second_moment = second;
  const float denominator =
      rounded_add(rounded_divide(rounded_square_root(second), scalars.sqrt_correction2), scalars.epsilon);
  parameter = rounded_subtract(rounded_multiply(parameter, scalars.decay_factor),
                               rounded_divide(rounded_multiply(scalars.step_size, first), denominator));
}

}  // namespace phalanx::backend::cuda
