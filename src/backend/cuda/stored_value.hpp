// How kernels read and write activations in the type they are held in (Backend::
// set_activation_precision): fp32, or 2-byte bf16/fp16 elements at the start of the same buffer.
// A kernel templated on `Stored` widens each element to float on load, computes in float as the
// fp32 kernel does, and rounds once to nearest even on store, as torch does for bf16 tensors.
// Compiled for host and device, so the host can test the roundings the kernels apply.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "host_device.hpp"
#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

PHALANX_HOST_DEVICE inline float widen(float value) {
  return value;
}
PHALANX_HOST_DEVICE inline float widen(__nv_bfloat16 value) {
  return __bfloat162float(value);
}
PHALANX_HOST_DEVICE inline float widen(__half value) {
  return __half2float(value);
}

template <typename Stored>
PHALANX_HOST_DEVICE Stored narrow(float value);

template <>
PHALANX_HOST_DEVICE inline float narrow<float>(float value) {
  return value;
}
template <>
PHALANX_HOST_DEVICE inline __nv_bfloat16 narrow<__nv_bfloat16>(float value) {
  return __float2bfloat16_rn(value);
}
template <>
PHALANX_HOST_DEVICE inline __half narrow<__half>(float value) {
  return __float2half_rn(value);
}

// Calls body(static_cast<Stored*>(nullptr)) with the element type of `precision`; a launcher
// recovers it as std::remove_pointer_t<decltype(tag)> and instantiates its kernel for it.
template <typename Body>
void with_stored_type(ComputePrecision precision, Body&& body) {
  switch (precision) {
    case ComputePrecision::Float32: body(static_cast<float*>(nullptr)); return;
    case ComputePrecision::BFloat16: body(static_cast<__nv_bfloat16*>(nullptr)); return;
    case ComputePrecision::Float16: body(static_cast<__half*>(nullptr)); return;
  }
}

template <typename Tag>
using StoredOf = std::remove_pointer_t<Tag>;

// Four neighbouring elements, moved with one vector load or store (16 bytes in fp32, 8 in
// bf16/fp16): memory-bound kernels reach the bus's bandwidth only with a few such loads in flight.
template <typename Stored>
struct alignas(4 * sizeof(Stored)) Quad {
  Stored value[4];
};

// Whether `pointer` may be read and written as Quads of `Stored`.
template <typename Stored>
bool quad_aligned(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % alignof(Quad<Stored>) == 0;
}

// An activation buffer's elements as their stored type (the Backend passes every buffer as float*).
template <typename Stored>
Stored* stored(float* data) {
  return reinterpret_cast<Stored*>(data);
}
template <typename Stored>
const Stored* stored(const float* data) {
  return reinterpret_cast<const Stored*>(data);
}

}  // namespace phalanx::backend::cuda
