// Move-only owners of the library handles and the stream a CudaBackend runs on: a CUDA stream,
// a cuDNN handle and a cuBLAS handle, the cuDNN descriptors (tensor, filter, convolution), and
// CUDA events.
// Construction throws on failure; destruction only logs.
#pragma once

#include <utility>

#include "cuda_check.hpp"

namespace phalanx::backend::cuda {

// One owner template for every create/destroy pair; Traits names the pair and its checks.
template <typename Traits>
class LibraryObject {
 public:
  using Handle = typename Traits::Handle;

  LibraryObject() { Traits::create(&handle_); }
  ~LibraryObject() {
    if (handle_) Traits::destroy(handle_);
  }
  LibraryObject(LibraryObject&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  LibraryObject& operator=(LibraryObject&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  LibraryObject(const LibraryObject&) = delete;
  LibraryObject& operator=(const LibraryObject&) = delete;

  Handle get() const { return handle_; }

 private:
  Handle handle_{};
};

struct CudnnHandleTraits {
  using Handle = cudnnHandle_t;
  static void create(Handle* handle) { PHALANX_CUDNN(cudnnCreate(handle)); }
  static void destroy(Handle handle) noexcept { PHALANX_CUDNN_LOG(cudnnDestroy(handle)); }
};
struct CublasHandleTraits {
  using Handle = cublasHandle_t;
  static void create(Handle* handle) { PHALANX_CUBLAS(cublasCreate(handle)); }
  static void destroy(Handle handle) noexcept { PHALANX_CUBLAS_LOG(cublasDestroy(handle)); }
};
struct TensorDescriptorTraits {
  using Handle = cudnnTensorDescriptor_t;
  static void create(Handle* handle) { PHALANX_CUDNN(cudnnCreateTensorDescriptor(handle)); }
  static void destroy(Handle handle) noexcept { PHALANX_CUDNN_LOG(cudnnDestroyTensorDescriptor(handle)); }
};
struct FilterDescriptorTraits {
  using Handle = cudnnFilterDescriptor_t;
  static void create(Handle* handle) { PHALANX_CUDNN(cudnnCreateFilterDescriptor(handle)); }
  static void destroy(Handle handle) noexcept { PHALANX_CUDNN_LOG(cudnnDestroyFilterDescriptor(handle)); }
};
struct ConvolutionDescriptorTraits {
  using Handle = cudnnConvolutionDescriptor_t;
  static void create(Handle* handle) { PHALANX_CUDNN(cudnnCreateConvolutionDescriptor(handle)); }
  static void destroy(Handle handle) noexcept {
    PHALANX_CUDNN_LOG(cudnnDestroyConvolutionDescriptor(handle));
  }
};
struct StreamTraits {
  using Handle = cudaStream_t;
  // Non-blocking: the stream never waits on work in the legacy default stream, so a library or
  // a stray cudaMemcpy elsewhere cannot serialise it.
  static void create(Handle* handle) {
    PHALANX_CUDA(cudaStreamCreateWithFlags(handle, cudaStreamNonBlocking));
  }
  static void destroy(Handle handle) noexcept { PHALANX_CUDA_LOG(cudaStreamDestroy(handle)); }
};

// Ordering events skip timing (cheaper to record and wait on); timing events keep it for
// cudaEventElapsedTime.
struct OrderingEventTraits {
  using Handle = cudaEvent_t;
  static void create(Handle* handle) {
    PHALANX_CUDA(cudaEventCreateWithFlags(handle, cudaEventDisableTiming));
  }
  static void destroy(Handle handle) noexcept { PHALANX_CUDA_LOG(cudaEventDestroy(handle)); }
};
struct TimingEventTraits {
  using Handle = cudaEvent_t;
  static void create(Handle* handle) { PHALANX_CUDA(cudaEventCreateWithFlags(handle, cudaEventDefault)); }
  static void destroy(Handle handle) noexcept { PHALANX_CUDA_LOG(cudaEventDestroy(handle)); }
};

using CudnnHandle = LibraryObject<CudnnHandleTraits>;
using CublasHandle = LibraryObject<CublasHandleTraits>;
using TensorDescriptor = LibraryObject<TensorDescriptorTraits>;
using FilterDescriptor = LibraryObject<FilterDescriptorTraits>;
using ConvolutionDescriptor = LibraryObject<ConvolutionDescriptorTraits>;
using Stream = LibraryObject<StreamTraits>;
using OrderingEvent = LibraryObject<OrderingEventTraits>;
using TimingEvent = LibraryObject<TimingEventTraits>;

}  // namespace phalanx::backend::cuda
