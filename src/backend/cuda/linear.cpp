// cuBLAS linear layers (see linear.hpp). The handle runs in CUBLAS_DEFAULT_MATH (set by the
// backend), which keeps fp32 GEMMs in full fp32: TF32 only ever comes with
// CUBLAS_TF32_TENSOR_OP_MATH. PEDANTIC is not needed, as default math does no reduced-precision
// reductions for fp32 either.
#include "linear.hpp"

#include "elementwise.hpp"

namespace phalanx::backend::cuda {

Linears::Linears(cublasHandle_t cublas, cudaStream_t stream, ColumnSums& column_sums)
    : cublas_(cublas), stream_(stream), column_sums_(column_sums) {}

void Linears::forward(const LinearGeometry& geometry, const float* input, const float* weight,
                      const float* bias, float* output) {
  const int batch = geometry.batch, in = geometry.in_features, out = geometry.out_features;
  if (batch <= 0 || out <= 0) return;
  const float one = 1.0f, zero = 0.0f;
  PHALANX_CUBLAS(cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, out, batch, in, &one, weight, in, input, in,
                             &zero, output, out));
  if (bias) launch_add_bias_rows(stream_, batch, out, bias, output);
}

void Linears::backward(const LinearGeometry& geometry, const float* input, const float* weight,
                       const float* grad_output, float* grad_input, float* grad_weight, float* grad_bias) {
  const int batch = geometry.batch, in = geometry.in_features, out = geometry.out_features;
  const float one = 1.0f, zero = 0.0f;
  if (grad_input)
    PHALANX_CUBLAS(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, in, batch, out, &one, weight, in,
                               grad_output, out, &zero, grad_input, in));
  PHALANX_CUBLAS(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, in, out, batch, &one, input, in, grad_output,
                             out, &zero, grad_weight, in));
  if (grad_bias) column_sums_.sum(stream_, batch, out, grad_output, grad_bias);
}

}  // namespace phalanx::backend::cuda
