// Casts between fp32 buffers and the bf16/fp16 operands the reduced-precision convolutions and
// GEMMs read and write, or the bf16/fp16 activations and an fp32 fallback (round to nearest even,
// as torch's .to(bfloat16) does).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

// Bytes of one element of `precision`.
std::size_t element_bytes(ComputePrecision precision);

void launch_convert_from_float(cudaStream_t stream, ComputePrecision precision, const float* source,
                               void* destination, std::int64_t count);
void launch_convert_to_float(cudaStream_t stream, ComputePrecision precision, const void* source,
                             float* destination, std::int64_t count);
// `count` elements of `from` into `to`, one of the two being fp32 (the other bf16/fp16).
void launch_convert(cudaStream_t stream, ComputePrecision from, const void* source, ComputePrecision to,
                    void* destination, std::int64_t count);

}  // namespace phalanx::backend::cuda
