// Checks for CUDA runtime, cuDNN and cuBLAS calls: a failed call throws phalanx::Error naming the
// call, its status text, the file and the line (a destructor logs instead, since it must not
// throw). Only this backend's sources include it; public headers stay free of CUDA types.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace phalanx::backend::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);

// For destructors: writes the failure to stderr and carries on.
void log_cuda_error(cudaError_t status, const char* call) noexcept;
void log_cudnn_error(cudnnStatus_t status, const char* call) noexcept;
void log_cublas_error(cublasStatus_t status, const char* call) noexcept;

}  // namespace phalanx::backend::cuda

#define PHALANX_CUDA(call)                                                                    \
  do {                                                                                        \
    const cudaError_t phalanx_status_ = (call);                                               \
    if (phalanx_status_ != cudaSuccess)                                                       \
      ::phalanx::backend::cuda::throw_cuda_error(phalanx_status_, #call, __FILE__, __LINE__); \
  } while (false)

#define PHALANX_CUDNN(call)                                                                    \
  do {                                                                                         \
    const cudnnStatus_t phalanx_status_ = (call);                                              \
    if (phalanx_status_ != CUDNN_STATUS_SUCCESS)                                               \
      ::phalanx::backend::cuda::throw_cudnn_error(phalanx_status_, #call, __FILE__, __LINE__); \
  } while (false)

#define PHALANX_CUBLAS(call)                                                                    \
  do {                                                                                          \
    const cublasStatus_t phalanx_status_ = (call);                                              \
    if (phalanx_status_ != CUBLAS_STATUS_SUCCESS)                                               \
      ::phalanx::backend::cuda::throw_cublas_error(phalanx_status_, #call, __FILE__, __LINE__); \
  } while (false)

// After a kernel launch: a bad configuration surfaces here, at the launch that caused it,
// rather than at the next synchronising call.
#define PHALANX_CUDA_LAUNCHED(kernel_name)                                                            \
  do {                                                                                                \
    const cudaError_t phalanx_status_ = cudaGetLastError();                                           \
    if (phalanx_status_ != cudaSuccess)                                                               \
      ::phalanx::backend::cuda::throw_cuda_error(phalanx_status_, "launch of " kernel_name, __FILE__, \
                                                 __LINE__);                                           \
  } while (false)

// Destructor variants: log, never throw.
#define PHALANX_CUDA_LOG(call)                                                                            \
  do {                                                                                                    \
    const cudaError_t phalanx_status_ = (call);                                                           \
    if (phalanx_status_ != cudaSuccess) ::phalanx::backend::cuda::log_cuda_error(phalanx_status_, #call); \
  } while (false)
#define PHALANX_CUDNN_LOG(call)                                          \
  do {                                                                   \
    const cudnnStatus_t phalanx_status_ = (call);                        \
    if (phalanx_status_ != CUDNN_STATUS_SUCCESS)                         \
      ::phalanx::backend::cuda::log_cudnn_error(phalanx_status_, #call); \
  } while (false)
#define PHALANX_CUBLAS_LOG(call)                                          \
  do {                                                                    \
    const cublasStatus_t phalanx_status_ = (call);                        \
    if (phalanx_status_ != CUBLAS_STATUS_SUCCESS)                         \
      ::phalanx::backend::cuda::log_cublas_error(phalanx_status_, #call); \
  } while (false)
