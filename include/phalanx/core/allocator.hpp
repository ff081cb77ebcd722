// Allocator: where a Tensor's bytes live. Backends implement it (host memory for the CPU
// backend, device memory for CUDA); core only needs this much to keep Tensor device-owned.
#pragma once

#include <cstddef>

namespace phalanx {

enum class DeviceKind { Cpu, Cuda };

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* pointer, std::size_t bytes) noexcept = 0;
  virtual DeviceKind device_kind() const = 0;
};

// Plain 64-byte aligned host memory (cache lines, AVX-512 loads).
class HostAllocator final : public Allocator {
 public:
  void* allocate(std::size_t bytes) override;
  void deallocate(void* pointer, std::size_t bytes) noexcept override;
  DeviceKind device_kind() const override { return DeviceKind::Cpu; }
  static HostAllocator& instance();
};

}  // namespace phalanx
