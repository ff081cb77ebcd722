// Max and average pooling over NHWC activations with own kernels rather than cuDNN: cuDNN's
// pooling backward needs the forward input and output, which the Backend interface does not
// pass back, while here max pooling keeps one int32 arg-max per output in the workspace (4 bytes
// per output instead of copies of both tensors). Backward gathers per input element (no atomics),
// so it is deterministic. Semantics are PyTorch's: max pooling ignores padding and propagates
// NaN; average pooling counts the padding (count_include_pad=True).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

// Max pooling: one int32 per output element; average pooling needs none.
std::size_t pooling_workspace_bytes(const PoolingGeometry& geometry);
// A null workspace (evaluation) skips recording the arg-max indices.
// The activations hold elements of `storage` (Backend::set_activation_precision); the sums run in
// float, and each result is rounded once.
void launch_pooling_forward(cudaStream_t stream, ComputePrecision storage, const PoolingGeometry& geometry,
                            const float* input, float* output, void* workspace);
void launch_pooling_backward(cudaStream_t stream, ComputePrecision storage, const PoolingGeometry& geometry,
                             const float* grad_output, const void* workspace, float* grad_input);

}  // namespace phalanx::backend::cuda
