// The activations of ActivationKind as float functions, written as torch's own CPU and CUDA kernels
// write them (the same formulas, in the same order), for the element-wise activation kernels and
// the kernels that fuse an activation into the op before it (forward epilogues, batch norm). Compiled
// for host and device, so the host tests can check the formulas the kernels run. No fast math:
// expf, erff and tanhf are CUDA's full-accuracy versions (a few ulp).
#pragma once

#include <cmath>

#include "host_device.hpp"
#include "phalanx/backend/geometry.hpp"

namespace phalanx::backend::cuda {

// Forward: value -> activation(value). The clamps compare rather than call fminf/fmaxf, so a NaN
// stays a NaN, as relu_forward keeps it.
struct NoActivation {
  PHALANX_HOST_DEVICE float operator()(float value) const { return value; }
};

// relu_forward's `x < 0 ? 0 : x`.
struct ReluActivation {
  PHALANX_HOST_DEVICE float operator()(float value) const { return value < 0.0f ? 0.0f : value; }
};

struct Relu6Activation {
  PHALANX_HOST_DEVICE float operator()(float value) const {
    return value < 0.0f ? 0.0f : (value > 6.0f ? 6.0f : value);
  }
};

struct SigmoidActivation {
  PHALANX_HOST_DEVICE float operator()(float value) const { return 1.0f / (1.0f + expf(-value)); }
};

struct HardsigmoidActivation {
  PHALANX_HOST_DEVICE float operator()(float value) const { return Relu6Activation{}(value + 3.0f) / 6.0f; }
};

struct SiluActivation {
  PHALANX_HOST_DEVICE float operator()(float value) const { return value / (1.0f + expf(-value)); }
};

struct HardswishActivation {
  PHALANX_HOST_DEVICE float operator()(float value) const {
    return value * Relu6Activation{}(value + 3.0f) / 6.0f;
  }
};

struct GeluActivation {
  PHALANX_HOST_DEVICE float operator()(float value) const {
    constexpr float inverse_square_root_2 = 0.70710678118654752440f;
    return value * 0.5f * (1.0f + erff(value * inverse_square_root_2));
  }
};

// sqrt(2 / pi) and the cubic coefficient of GELU's tanh approximation.
constexpr float gelu_tanh_beta = 0.79788456080286535588f;
constexpr float gelu_tanh_kappa = 0.044715f;

struct GeluTanhActivation {
  PHALANX_HOST_DEVICE float operator()(float value) const {
    const float inner = gelu_tanh_beta * (value + gelu_tanh_kappa * value * value * value);
    return 0.5f * value * (1.0f + tanhf(inner));
  }
};

// Backward from the output: (output, grad_output) -> grad_input. The kinks (0 and 6, -3 and 3)
// pass no gradient, as torch's hardtanh_backward and hardsigmoid_backward.
struct Relu6Gradient {
  PHALANX_HOST_DEVICE float operator()(float output, float grad_output) const {
    return output > 0.0f && output < 6.0f ? grad_output : 0.0f;
  }
};

struct SigmoidGradient {
  PHALANX_HOST_DEVICE float operator()(float output, float grad_output) const {
    return grad_output * (1.0f - output) * output;
  }
};

struct HardsigmoidGradient {
  PHALANX_HOST_DEVICE float operator()(float output, float grad_output) const {
    return output > 0.0f && output < 1.0f ? grad_output * (1.0f / 6.0f) : 0.0f;
  }
};

// Backward from the input: (input, grad_output) -> grad_input.
struct SiluGradient {
  PHALANX_HOST_DEVICE float operator()(float input, float grad_output) const {
    const float sigmoid = 1.0f / (1.0f + expf(-input));
    return grad_output * sigmoid * (1.0f + input * (1.0f - sigmoid));
  }
};

// torch's hardswish_backward: 0 below -3, x / 3 + 1/2 up to 3 (both ends included), 1 above.
struct HardswishGradient {
  PHALANX_HOST_DEVICE float operator()(float input, float grad_output) const {
    if (input < -3.0f) return 0.0f;
    if (input <= 3.0f) return grad_output * (input / 3.0f + 0.5f);
    return grad_output;
  }
};

struct GeluGradient {
  PHALANX_HOST_DEVICE float operator()(float input, float grad_output) const {
    constexpr float inverse_square_root_2 = 0.70710678118654752440f;
    constexpr float inverse_square_root_2_pi = 0.39894228040143267794f;
    const float cdf = 0.5f * (1.0f + erff(input * inverse_square_root_2));
    const float pdf = expf(-0.5f * input * input) * inverse_square_root_2_pi;
    return grad_output * (cdf + input * pdf);
  }
};

struct GeluTanhGradient {
  PHALANX_HOST_DEVICE float operator()(float input, float grad_output) const {
    const float square = input * input;
    const float inner = gelu_tanh_beta * (input + gelu_tanh_kappa * square * input);
    const float tanh_inner = tanhf(inner);
    const float left = 0.5f * input;
    const float right = 1.0f + tanh_inner;
    const float left_derivative = 0.5f * right;
    const float right_derivative =
        left * (1.0f - tanh_inner * tanh_inner) * gelu_tanh_beta * (1.0f + 3.0f * gelu_tanh_kappa * square);
    return grad_output * (left_derivative + right_derivative);
  }
};

// Calls body(function) with the forward function of a fused activation: kernels that fuse one are
// templates over it, so none of them branches per element on which it is.
template <typename Body>
void with_fused_activation(FusedActivation activation, Body&& body) {
  switch (activation) {
    case FusedActivation::None: body(NoActivation{}); return;
    case FusedActivation::Relu: body(ReluActivation{}); return;
    case FusedActivation::Relu6: body(Relu6Activation{}); return;
    case FusedActivation::Sigmoid: body(SigmoidActivation{}); return;
    case FusedActivation::Hardsigmoid: body(HardsigmoidActivation{}); return;
  }
}

}  // namespace phalanx::backend::cuda
