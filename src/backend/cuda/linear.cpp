// cuBLAS linear layers (see linear.hpp). The handle runs in CUBLAS_DEFAULT_MATH (set by the
// backend), which keeps fp32 GEMMs in full fp32: TF32 only ever comes with
// CUBLAS_TF32_TENSOR_OP_MATH. PEDANTIC is not needed, as default math does no reduced-precision
// reductions for fp32 either.
#include "linear.hpp"

#include "forward_epilogue.hpp"
#include "precision_conversion.hpp"

namespace phalanx::backend::cuda {

namespace {

cudaDataType_t element_type(ComputePrecision precision) {
  switch (precision) {
    case ComputePrecision::BFloat16: return CUDA_R_16BF;
    case ComputePrecision::Float16: return CUDA_R_16F;
    case ComputePrecision::Float32: break;
  }
  return CUDA_R_32F;
}

}  // namespace

Linears::Linears(cublasHandle_t cublas, cudaStream_t stream, ColumnSums& column_sums)
    : cublas_(cublas), stream_(stream), column_sums_(column_sums) {}

void Linears::gemm(cublasOperation_t transpose_a, cublasOperation_t transpose_b, int m, int n, int k,
                   const Operand& a, const Operand& b, void* c, ComputePrecision c_type, int ldc) {
  const float one = 1.0f, zero = 0.0f;
  const bool all_float32 = a.type == ComputePrecision::Float32 && b.type == ComputePrecision::Float32 &&
                           c_type == ComputePrecision::Float32;
  if (all_float32 && precision_ == ComputePrecision::Float32) {
    PHALANX_CUBLAS(cublasSgemm(
        cublas_, transpose_a, transpose_b, m, n, k, &one, static_cast<const float*>(a.data), a.leading,
        static_cast<const float*>(b.data), b.leading, &zero, static_cast<float*>(c), ldc));
    return;
  }
  // fp32 buffers under bf16/fp16: cuBLAS casts the operands for the tensor cores itself. Operands
  // already held in bf16/fp16: plain fp32 accumulation over them.
  const cublasComputeType_t compute = !all_float32 ? CUBLAS_COMPUTE_32F
                                      : precision_ == ComputePrecision::BFloat16
                                          ? CUBLAS_COMPUTE_32F_FAST_16BF
                                          : CUBLAS_COMPUTE_32F_FAST_16F;
  PHALANX_CUBLAS(cublasGemmEx(cublas_, transpose_a, transpose_b, m, n, k, &one, a.data, element_type(a.type),
                              a.leading, b.data, element_type(b.type), b.leading, &zero, c,
                              element_type(c_type), ldc, compute, CUBLAS_GEMM_DEFAULT));
}

Linears::Operand Linears::weight_operand(const LinearGeometry& geometry, const float* weight) {
  // Activations held in bf16/fp16 pair with weights of the same type (cuBLAS multiplies operands of
  // one type): the fp32 weights are cast into scratch, a pass over the layer's small weight matrix.
  if (storage_ == ComputePrecision::Float32) return {weight, ComputePrecision::Float32, geometry.in_features};
  const auto count = static_cast<std::int64_t>(geometry.in_features) * geometry.out_features;
  weight_scratch_.ensure(element_bytes(storage_) * static_cast<std::size_t>(count));
  launch_convert_from_float(stream_, storage_, weight, weight_scratch_.data(), count);
  return {weight_scratch_.data(), storage_, geometry.in_features};
}

void Linears::forward(const LinearGeometry& geometry, const float* input, const float* weight,
                      const float* bias, float* output) {
  const int batch = geometry.batch, in = geometry.in_features, out = geometry.out_features;
  if (batch <= 0 || out <= 0) return;
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, out, batch, in, weight_operand(geometry, weight), {input, storage_, in},
       output, storage_, out);
  // The GEMM wrote the stored type (accumulated in fp32); bias and fused ReLU in one pass.
  launch_forward_epilogue(stream_, storage_, output, batch, out, bias, geometry.activation, storage_, output);
}

void Linears::backward(const LinearGeometry& geometry, const float* input, const float* weight,
                       const float* grad_output, float* grad_input, float* grad_weight, float* grad_bias) {
  const int batch = geometry.batch, in = geometry.in_features, out = geometry.out_features;
  if (grad_input)
    gemm(CUBLAS_OP_N, CUBLAS_OP_N, in, batch, out, weight_operand(geometry, weight),
         {grad_output, storage_, out}, grad_input, storage_, in);
  // The weight gradient is fp32 whatever the activations are held in.
  gemm(CUBLAS_OP_N, CUBLAS_OP_T, in, out, batch, {input, storage_, in}, {grad_output, storage_, out},
       grad_weight, ComputePrecision::Float32, in);
  if (grad_bias) column_sums_.sum(stream_, storage_, batch, out, grad_output, grad_bias);
}

}  // namespace phalanx::backend::cuda
