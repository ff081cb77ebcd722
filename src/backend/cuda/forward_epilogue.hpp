// The end of a convolution's or linear layer's forward in one pass over its output: the result of
// cuDNN/cuBLAS (fp32, or bf16/fp16 under reduced precision) is converted to the type the
// activations are held in, the bias added and the fused activation applied, where separate kernels
// would read and write the activations up to three times (conversion, bias, activation).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

// output[row, column] = activation(float(result[row, column]) + bias[column]) over a row-major
// [rows, columns] matrix, rounded once to `output_type`. `result` holds elements of `result_type`
// (it may be `output` itself when the types agree); `bias` may be null (nothing is added, so -0
// stays -0 as without a bias kernel). Bitwise the separate conversion, bias and relu_forward
// kernels: the same float operations in the same order, ReLU as `x < 0 ? 0 : x` (NaN stays NaN),
// Relu6, Sigmoid and Hardsigmoid as activation_forward computes them (activation_functions.hpp;
// with 2-byte activations the separate kernels round before the activation too, this once).
// Launches nothing when there is nothing to do (the same types, result in place, no bias, no
// activation).
void launch_forward_epilogue(cudaStream_t stream, ComputePrecision result_type, const void* result,
                             std::int64_t rows, int columns, const float* bias, FusedActivation activation,
                             ComputePrecision output_type, float* output);

}  // namespace phalanx::backend::cuda
