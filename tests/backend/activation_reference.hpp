// The activations of backend::ActivationKind as torch defines them, evaluated in double, for the
// CPU tests and the CPU-versus-CUDA parity tests: forward, derivative (with torch's choice at each
// kink), the test values (kinks, their neighbours, large magnitudes), and the bf16 storage helpers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "phalanx/backend/geometry.hpp"

namespace phalanx::testing {

inline const std::vector<backend::ActivationKind>& all_activation_kinds() {
  using enum backend::ActivationKind;
  static const std::vector<backend::ActivationKind> kinds = {Relu6,     Sigmoid, Hardsigmoid, Silu,
                                                             Hardswish, Gelu,    GeluTanh};
  return kinds;
}

inline std::string activation_name(backend::ActivationKind kind) {
  using enum backend::ActivationKind;
  switch (kind) {
    case Relu6: return "relu6";
    case Sigmoid: return "sigmoid";
    case Hardsigmoid: return "hardsigmoid";
    case Silu: return "silu";
    case Hardswish: return "hardswish";
    case Gelu: return "gelu";
    case GeluTanh: return "gelu_tanh";
  }
  return "?";
}

inline double reference_sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

inline double reference_forward(backend::ActivationKind kind, double x) {
  using enum backend::ActivationKind;
  const double clipped = std::min(std::max(x + 3.0, 0.0), 6.0);
  switch (kind) {
    case Relu6: return std::min(std::max(x, 0.0), 6.0);
    case Sigmoid: return reference_sigmoid(x);
    case Hardsigmoid: return clipped / 6.0;
    case Silu: return x * reference_sigmoid(x);
    case Hardswish: return x * clipped / 6.0;
    case Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case GeluTanh: {
      const double beta = std::sqrt(2.0 / M_PI);
      return 0.5 * x * (1.0 + std::tanh(beta * (x + 0.044715 * x * x * x)));
    }
  }
  return NAN;
}

// torch's derivative, kinks included: relu6 passes nothing at 0 and 6, hardsigmoid nothing at -3
// and 3, hardswish x / 3 + 1/2 at both -3 and 3.
inline double reference_derivative(backend::ActivationKind kind, double x) {
  using enum backend::ActivationKind;
  switch (kind) {
    case Relu6: return x > 0.0 && x < 6.0 ? 1.0 : 0.0;
    case Sigmoid: return reference_sigmoid(x) * (1.0 - reference_sigmoid(x));
    case Hardsigmoid: return x > -3.0 && x < 3.0 ? 1.0 / 6.0 : 0.0;
    case Silu: return reference_sigmoid(x) * (1.0 + x * (1.0 - reference_sigmoid(x)));
    case Hardswish: return x < -3.0 ? 0.0 : x <= 3.0 ? x / 3.0 + 0.5 : 1.0;
    case Gelu: {
      const double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
      const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
      return cdf + x * pdf;
    }
    case GeluTanh: {
      const double beta = std::sqrt(2.0 / M_PI), kappa = 0.044715;
      const double inner_tanh = std::tanh(beta * (x + kappa * x * x * x));
      return 0.5 * (1.0 + inner_tanh) +
             0.5 * x * (1.0 - inner_tanh * inner_tanh) * beta * (1.0 + 3.0 * kappa * x * x);
    }
  }
  return NAN;
}

// Where the kind's derivative jumps.
inline std::vector<double> activation_kinks(backend::ActivationKind kind) {
  using enum backend::ActivationKind;
  if (kind == Relu6) return {0.0, 6.0};
  if (kind == Hardsigmoid || kind == Hardswish) return {-3.0, 3.0};
  return {};
}

// Whether `actual` is grad_output * kind'(x) within `tolerance`; at a kink either one-sided
// derivative counts too (a backend may take either; torch's own choice is one of them).
inline bool gradient_matches(backend::ActivationKind kind, double x, double grad_output, double actual,
                             double tolerance) {
  std::vector<double> derivatives = {reference_derivative(kind, x)};
  for (const double kink : activation_kinks(kind))
    if (x == kink)
      derivatives = {reference_derivative(kind, x), reference_derivative(kind, std::nextafter(x, -INFINITY)),
                     reference_derivative(kind, std::nextafter(x, INFINITY))};
  for (const double derivative : derivatives)
    if (std::fabs(actual - grad_output * derivative) <= tolerance) return true;
  return false;
}

// Forward within a few ulp of the reference: relative, with an absolute floor where float cannot
// be relative. GELU's 1 + erf(x / sqrt(2)) cancels for negative x (torch computes it so too), which
// leaves a few ulp of 1 times |x| / 2; oneDNN's hardsigmoid is x / 6 + 1/2 where torch's is
// (x + 3) / 6, which near -3 cancels to about an ulp of 1/2 (times |x| for hardswish).
inline double forward_tolerance(backend::ActivationKind kind, double x, double expected, double relative) {
  using enum backend::ActivationKind;
  double floor = 1e-30;
  if (kind == Gelu || kind == GeluTanh) floor = 2.5e-7 * std::fabs(x);
  if (kind == Hardsigmoid) floor = 6e-8;
  if (kind == Hardswish) floor = 6e-8 * std::min(std::fabs(x), 3.0);
  return relative * std::fabs(expected) + floor;
}

// Whether the float formulas of the kind's derivative stay finite at x: GELU's tanh form squares x,
// and beyond |x| = 1e19 the square overflows to infinity and meets a zero (1 - tanh^2), which gives
// NaN in torch's formula as in oneDNN's. No network meets such values; the tests leave them out.
inline bool derivative_representable(backend::ActivationKind kind, double x) {
  return kind != backend::ActivationKind::GeluTanh || std::fabs(x) < 1e19;
}

// The kinks, values beside them, ordinary values, and magnitudes where exp, erf and tanh saturate
// or overflow in float.
inline std::vector<float> activation_test_values() {
  std::vector<float> values = {0.0f, -0.0f, 3.0f, -3.0f, 6.0f, -6.0f};
  for (const float center : {0.0f, 3.0f, -3.0f, 6.0f})
    for (const float offset : {1e-3f, 1e-6f})
      for (const float sign : {-1.0f, 1.0f}) values.push_back(center + sign * offset);
  for (const float magnitude : {0.25f, 0.5f,  1.0f,  1.5f,  2.0f,  2.5f,  4.0f,   5.0f, 8.0f,  10.0f,
                                15.0f, 20.0f, 30.0f, 50.0f, 87.0f, 88.5f, 100.0f, 1e4f, 1e30f, 1e-20f})
    for (const float sign : {-1.0f, 1.0f}) values.push_back(sign * magnitude);
  return values;
}

// `values` with every element within 0.02 of a kink of any kind moved 0.05 away from it.
inline std::vector<float> away_from_kinks(std::vector<float> values) {
  for (float& value : values)
    for (const float kink : {-3.0f, 0.0f, 3.0f, 6.0f})
      if (std::fabs(value - kink) < 0.02f) value = kink + (value < kink ? -0.05f : 0.05f);
  return values;
}

// ---- bf16 storage (the first half of an fp32-sized buffer, rounded to nearest even) ----
inline std::uint16_t bf16_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline float from_bf16_bits(std::uint16_t stored) {
  const std::uint32_t bits = static_cast<std::uint32_t>(stored) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline std::vector<float> rounded_to_bf16(std::vector<float> values) {
  for (float& value : values) value = from_bf16_bits(bf16_bits(value));
  return values;
}

// `values` as bf16 in the first half of a buffer of values.size() floats; the rest holds a marker.
inline std::vector<float> stored_bf16(const std::vector<float>& values) {
  std::vector<float> buffer(values.size(), 12345.0f);
  auto* stored = reinterpret_cast<std::uint16_t*>(buffer.data());
  for (std::size_t i = 0; i < values.size(); ++i) stored[i] = bf16_bits(values[i]);
  return buffer;
}

inline std::vector<float> read_bf16(const std::vector<float>& buffer) {
  std::vector<float> values(buffer.size());
  const auto* stored = reinterpret_cast<const std::uint16_t*>(buffer.data());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = from_bf16_bits(stored[i]);
  return values;
}

inline bool second_half_untouched(const std::vector<float>& buffer) {
  for (std::size_t i = (buffer.size() + 1) / 2; i < buffer.size(); ++i)
    if (buffer[i] != 12345.0f) return false;
  return true;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace phalanx::testing
