// The throwing and logging halves of the CUDA/cuDNN/cuBLAS checks (see cuda_check.hpp).
// A CUDA runtime error that is not sticky stays queued as the "last error" until read; reading
// it here keeps a handled failure (say, an out-of-memory) from being reported again by the
// next launch check.
#include "cuda_check.hpp"

#include <cstdio>

#include "phalanx/core/error.hpp"

namespace phalanx::backend::cuda {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  (void)cudaGetLastError();
  throw_internal_error(detail::concat("CUDA call failed: ", call, ": ", cudaGetErrorName(status), " (",
                                      cudaGetErrorString(status), ")"),
                       file, line);
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  // cuDNN 9 keeps a longer explanation of the last failure on this thread.
  char explanation[512] = {};
  cudnnGetLastErrorString(explanation, sizeof explanation);
  throw_internal_error(detail::concat("cuDNN call failed: ", call, ": ", cudnnGetErrorString(status),
                                      explanation[0] ? " (" : "", explanation, explanation[0] ? ")" : ""),
                       file, line);
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw_internal_error(detail::concat("cuBLAS call failed: ", call, ": ", cublasGetStatusName(status), " (",
                                      cublasGetStatusString(status), ")"),
                       file, line);
}

void log_cuda_error(cudaError_t status, const char* call) noexcept {
  (void)cudaGetLastError();
  std::fprintf(stderr, "phalanx: warning: CUDA call failed during cleanup: %s: %s\n", call,
               cudaGetErrorString(status));
}

void log_cudnn_error(cudnnStatus_t status, const char* call) noexcept {
  std::fprintf(stderr, "phalanx: warning: cuDNN call failed during cleanup: %s: %s\n", call,
               cudnnGetErrorString(status));
}

void log_cublas_error(cublasStatus_t status, const char* call) noexcept {
  std::fprintf(stderr, "phalanx: warning: cuBLAS call failed during cleanup: %s: %s\n", call,
               cublasGetStatusString(status));
}

}  // namespace phalanx::backend::cuda
