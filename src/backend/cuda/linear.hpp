// Linear layers on cuBLAS SGEMM. cuBLAS is column-major; a row-major [rows, columns] matrix is
// the column-major [columns, rows] one, so each product below is written for the transposes:
//   forward        Y[B,O]  = X[B,I] W[O,I]^T   ->  Y^T = W X^T        (gemm T,N: m=O n=B k=I)
//   backward data  dX[B,I] = dY[B,O] W[O,I]    ->  dX^T = W^T dY^T    (gemm N,N: m=I n=B k=O)
//   backward W     dW[O,I] = dY^T X            ->  dW^T = X^T dY      (gemm N,T: m=I n=O k=B)
// Bias add and bias gradient are own kernels (a broadcast and a column sum).
// In bf16/fp16 precision the GEMMs run as cublasGemmEx on the same fp32 buffers with the compute
// types CUBLAS_COMPUTE_32F_FAST_16BF / _16F: cuBLAS casts the operands to bf16/fp16 for the tensor
// cores and accumulates in fp32, so no cast kernels or scratch are needed. With activations held
// in bf16/fp16 (set_storage), the GEMMs read and write them as they are (CUBLAS_COMPUTE_32F over
// 16-bit operands); the weights are cast to match, and the weight gradient is written in fp32.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_handles.hpp"
#include "device_buffer.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/backend/geometry.hpp"
#include "reduction.hpp"

namespace phalanx::backend::cuda {

class Linears {
 public:
  Linears(cublasHandle_t cublas, cudaStream_t stream, ColumnSums& column_sums);

  void set_precision(ComputePrecision precision) { precision_ = precision; }
  // The type activations are held in (Backend::set_activation_precision): fp32 or the precision.
  void set_storage(ComputePrecision storage) { storage_ = storage; }

  void forward(const LinearGeometry& geometry, const float* input, const float* weight, const float* bias,
               float* output);
  // grad_input and grad_bias may be null.
  void backward(const LinearGeometry& geometry, const float* input, const float* weight,
                const float* grad_output, float* grad_input, float* grad_weight, float* grad_bias);

 private:
  cublasHandle_t cublas_;
  cudaStream_t stream_;
  ColumnSums& column_sums_;
  ComputePrecision precision_ = ComputePrecision::Float32;
  ComputePrecision storage_ = ComputePrecision::Float32;
  DeviceBuffer weight_scratch_;  // the weights cast to bf16/fp16 when the activations are held so

  // A GEMM operand: its elements, their type and its leading dimension.
  struct Operand {
    const void* data;
    ComputePrecision type;
    int leading;
  };
  // The weights as the operand that pairs with the activations.
  Operand weight_operand(const LinearGeometry& geometry, const float* weight);
  // C = A op B in column-major terms (cuBLAS's argument order), in the current precision.
  void gemm(cublasOperation_t transpose_a, cublasOperation_t transpose_b, int m, int n, int k,
            const Operand& a, const Operand& b, void* c, ComputePrecision c_type, int ldc);
};

}  // namespace phalanx::backend::cuda
