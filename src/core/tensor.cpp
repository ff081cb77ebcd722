// Tensor ownership and the host allocator.
#include "phalanx/core/tensor.hpp"

#include <cstdlib>
#include <new>
#include <utility>

#include "phalanx/core/error.hpp"

namespace phalanx {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Int32: return 4;
    case DType::UInt8: return 1;
  }
  return 0;
}

std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Int32: return "int32";
    case DType::UInt8: return "uint8";
  }
  return "unknown";
}

void* HostAllocator::allocate(std::size_t bytes) {
  constexpr std::size_t alignment = 64;
  const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* pointer = std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
  if (!pointer) throw_internal_error("host allocation of " + std::to_string(bytes) + " bytes failed", __FILE__, __LINE__);
  return pointer;
}

void HostAllocator::deallocate(void* pointer, std::size_t) noexcept { std::free(pointer); }

HostAllocator& HostAllocator::instance() {
  static HostAllocator allocator;
  return allocator;
}

Tensor::Tensor(Allocator& allocator, Shape shape, DType dtype)
    : allocator_(&allocator), shape_(std::move(shape)), dtype_(dtype) {
  capacity_bytes_ = bytes();
  data_ = capacity_bytes_ ? allocator_->allocate(capacity_bytes_) : nullptr;
}

Tensor::~Tensor() { release(); }

Tensor::Tensor(Tensor&& other) noexcept
    : allocator_(std::exchange(other.allocator_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      capacity_bytes_(std::exchange(other.capacity_bytes_, 0)),
      shape_(std::move(other.shape_)),
      dtype_(other.dtype_) {}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    release();
    allocator_ = std::exchange(other.allocator_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    capacity_bytes_ = std::exchange(other.capacity_bytes_, 0);
    shape_ = std::move(other.shape_);
    dtype_ = other.dtype_;
  }
  return *this;
}

void Tensor::release() noexcept {
  if (data_ && allocator_) allocator_->deallocate(data_, capacity_bytes_);
  data_ = nullptr;
  capacity_bytes_ = 0;
}

void Tensor::reshape(Shape shape) {
  const std::size_t needed = static_cast<std::size_t>(shape.elements()) * dtype_size(dtype_);
  PHALANX_CHECK(needed <= capacity_bytes_, "reshape to ", shape.to_string(), " exceeds capacity of ",
                capacity_bytes_, " bytes");
  shape_ = std::move(shape);
}

void Tensor::ensure(Allocator& allocator, Shape shape, DType dtype) {
  const std::size_t needed = static_cast<std::size_t>(shape.elements()) * dtype_size(dtype);
  if (allocator_ == &allocator && needed <= capacity_bytes_) {
    dtype_ = dtype;
    shape_ = std::move(shape);
    return;
  }
  *this = Tensor(allocator, std::move(shape), dtype);
}

}  // namespace phalanx
