// The element types a CPU rank holds activations in (Backend::set_activation_precision): float, or
// Bf16 under train.activation_dtype: bf16, the upper 16 bits of an IEEE float stored in the first
// half of the caller's fp32-sized buffer. The loops of the element-wise ops, batch norm and the
// loss are templates over the element type: they widen each value to float, compute in float, and
// narrow once on the way out. For float both are the identity, so the fp32 instantiation computes
// exactly what the loops did before they were templates.
#pragma once

#include <cstdint>
#include <cstring>

namespace phalanx::backend::cpu {

struct Bf16 {
  std::uint16_t bits;
};

inline float widen(float value) {
  return value;
}

// Exact: every bf16 value is a float.
inline float widen(Bf16 value) {
  const std::uint32_t bits = static_cast<std::uint32_t>(value.bits) << 16;
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

inline void narrow_into(float& destination, float value) {
  destination = value;
}

// Round to nearest even, as oneDNN's conversions (and vcvtneps2bf16) do; a NaN stays a NaN (its
// quiet bit set, so truncating a payload cannot turn it into infinity).
inline void narrow_into(Bf16& destination, float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const bool not_a_number = (bits & 0x7fffffffu) > 0x7f800000u;
  const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  destination.bits = static_cast<std::uint16_t>(not_a_number ? (bits >> 16) | 0x40u : rounded);
}

// The caller's float* activation buffers seen as bf16 storage.
inline Bf16* as_bf16(float* data) {
  return reinterpret_cast<Bf16*>(data);
}
inline const Bf16* as_bf16(const float* data) {
  return reinterpret_cast<const Bf16*>(data);
}

}  // namespace phalanx::backend::cpu
