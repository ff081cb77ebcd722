// Functions compiled for both the host and the device, and float arithmetic that rounds after every
// operation on both. nvcc contracts a * b + c into one fused multiply-add by default (one rounding
// instead of two), while the CPU backend's x86-64 build rounds each operation; where the two
// backends must agree bit for bit (the optimizer step, which every rank of a mixed CPU/GPU job
// applies to its own copy of the parameters), the device code spells each operation with these.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define PHALANX_HOST_DEVICE __host__ __device__
#else
#define PHALANX_HOST_DEVICE
#endif

namespace phalanx::backend::cuda {

// Each rounds its own result to nearest even and is never fused with a neighbouring operation.
PHALANX_HOST_DEVICE inline float rounded_multiply(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

PHALANX_HOST_DEVICE inline float rounded_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

PHALANX_HOST_DEVICE inline float rounded_subtract(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

PHALANX_HOST_DEVICE inline float rounded_divide(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

PHALANX_HOST_DEVICE inline float rounded_square_root(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

}  // namespace phalanx::backend::cuda
