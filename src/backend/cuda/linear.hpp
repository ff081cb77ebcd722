// Linear layers on cuBLAS SGEMM. cuBLAS is column-major; a row-major [rows, columns] matrix is
// the column-major [columns, rows] one, so each product below is written for the transposes:
//   forward        Y[B,O]  = X[B,I] W[O,I]^T   ->  Y^T = W X^T        (gemm T,N: m=O n=B k=I)
//   backward data  dX[B,I] = dY[B,O] W[O,I]    ->  dX^T = W^T dY^T    (gemm N,N: m=I n=B k=O)
//   backward W     dW[O,I] = dY^T X            ->  dW^T = X^T dY      (gemm N,T: m=I n=O k=B)
// Bias add and bias gradient are own kernels (a broadcast and a column sum).
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_handles.hpp"
#include "phalanx/backend/geometry.hpp"
#include "reduction.hpp"

namespace phalanx::backend::cuda {

class Linears {
 public:
  Linears(cublasHandle_t cublas, cudaStream_t stream, ColumnSums& column_sums);

  void forward(const LinearGeometry& geometry, const float* input, const float* weight, const float* bias,
               float* output);
  // grad_input and grad_bias may be null.
  void backward(const LinearGeometry& geometry, const float* input, const float* weight,
                const float* grad_output, float* grad_input, float* grad_weight, float* grad_bias);

 private:
  cublasHandle_t cublas_;
  cudaStream_t stream_;
  ColumnSums& column_sums_;
};

}  // namespace phalanx::backend::cuda
