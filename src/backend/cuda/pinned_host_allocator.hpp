// PinnedHostAllocator: page-locked host memory (cudaHostAlloc) for the buffers a GPU rank uploads
// every step. Pageable memory makes the runtime copy each batch into its own pinned staging area
// first; pinned memory goes straight to the DMA engine.
#pragma once

#include "phalanx/core/allocator.hpp"

namespace phalanx::backend::cuda {

class PinnedHostAllocator final : public Allocator {
 public:
  void* allocate(std::size_t bytes) override;
  void deallocate(void* pointer, std::size_t bytes) noexcept override;
  DeviceKind device_kind() const override { return DeviceKind::Cpu; }  // host memory, readable there
};

}  // namespace phalanx::backend::cuda
