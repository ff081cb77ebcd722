// Float <-> bf16 conversion kernels for compressed gradient all-reduce: the bucket is narrowed to
// bf16 (round to nearest even) before NCCL sums it and widened back afterwards, on the given
// stream so that it stays ordered with the all-reduce.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace phalanx::comm::nccl {

// `bfloat16_values` holds `count` 16-bit bf16 values (raw bits, so callers need no cuda_bf16.h).
void float_to_bfloat16(const float* values, std::uint16_t* bfloat16_values, std::int64_t count,
                       cudaStream_t stream);
void bfloat16_to_float(const std::uint16_t* bfloat16_values, float* values, std::int64_t count,
                       cudaStream_t stream);

}  // namespace phalanx::comm::nccl
