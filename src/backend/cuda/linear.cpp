// cuBLAS linear layers (see linear.hpp). The handle runs in CUBLAS_DEFAULT_MATH (set by the
// backend), which keeps fp32 GEMMs in full fp32: TF32 only ever comes with
// CUBLAS_TF32_TENSOR_OP_MATH. PEDANTIC is not needed, as default math does no reduced-precision
// reductions for fp32 either.
#include "linear.hpp"

#include "elementwise.hpp"
#include "forward_epilogue.hpp"

namespace phalanx::backend::cuda {

Linears::Linears(cublasHandle_t cublas, cudaStream_t stream, ColumnSums& column_sums)
    : cublas_(cublas), stream_(stream), column_sums_(column_sums) {}

void Linears::gemm(cublasOperation_t transpose_a, cublasOperation_t transpose_b, int m, int n, int k,
                   const float* a, int lda, const float* b, int ldb, float* c, int ldc) {
  const float one = 1.0f, zero = 0.0f;
  if (precision_ == ComputePrecision::Float32) {
    PHALANX_CUBLAS(
        cublasSgemm(cublas_, transpose_a, transpose_b, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc));
    return;
  }
  const cublasComputeType_t compute =
      precision_ == ComputePrecision::BFloat16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F_FAST_16F;
  PHALANX_CUBLAS(cublasGemmEx(cublas_, transpose_a, transpose_b, m, n, k, &one, a, CUDA_R_32F, lda, b,
                              CUDA_R_32F, ldb, &zero, c, CUDA_R_32F, ldc, compute, CUBLAS_GEMM_DEFAULT));
}

void Linears::forward(const LinearGeometry& geometry, const float* input, const float* weight,
                      const float* bias, float* output) {
  const int batch = geometry.batch, in = geometry.in_features, out = geometry.out_features;
  if (batch <= 0 || out <= 0) return;
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, out, batch, in, weight, in, input, in, output, out);
  // The GEMM writes fp32 (fp32 accumulation also under bf16/fp16); bias and fused ReLU in one pass.
  launch_forward_epilogue(stream_, ComputePrecision::Float32, output, batch, out, bias, geometry.activation,
                          output);
}

void Linears::backward(const LinearGeometry& geometry, const float* input, const float* weight,
                       const float* grad_output, float* grad_input, float* grad_weight, float* grad_bias) {
  const int batch = geometry.batch, in = geometry.in_features, out = geometry.out_features;
  if (grad_input)
    gemm(CUBLAS_OP_N, CUBLAS_OP_N, in, batch, out, weight, in, grad_output, out, grad_input, in);
  gemm(CUBLAS_OP_N, CUBLAS_OP_T, in, out, batch, input, in, grad_output, out, grad_weight, in);
  if (grad_bias) column_sums_.sum(stream_, batch, out, grad_output, grad_bias);
}

}  // namespace phalanx::backend::cuda
