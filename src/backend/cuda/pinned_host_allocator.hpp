// PinnedHostAllocator: page-locked host memory (cudaHostAlloc) for the buffers a GPU rank uploads
// every step. Pageable memory makes the runtime copy each batch into its own pinned staging area
// first; pinned memory goes straight to the DMA engine.
#pragma once

#include "phalanx/core/allocator.hpp"

namespace phalanx::backend::cuda {

class PinnedHostAllocator final : public Allocator {
 public:
  // `device` is made current before each call: on a thread where no device was ever selected,
  // the runtime would otherwise create a context on device 0, and every rank of a node would then
  // hold one there (hundreds of MiB each) beside the context on its own GPU.
  explicit PinnedHostAllocator(int device) : device_(device) {}
  void* allocate(std::size_t bytes) override;
  void deallocate(void* pointer, std::size_t bytes) noexcept override;
  DeviceKind device_kind() const override { return DeviceKind::Cpu; }  // host memory, readable there

 private:
  int device_;
};

}  // namespace phalanx::backend::cuda
