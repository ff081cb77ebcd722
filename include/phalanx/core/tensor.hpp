// Tensor: a move-only block of device memory with a shape. Copying data is always an explicit
// call (Backend::copy), so no copy happens by accident. A tensor may be reshaped to any shape
// that fits its capacity, which lets the last, smaller evaluation batch reuse the buffers.
#pragma once

#include <cstddef>

#include "phalanx/core/allocator.hpp"
#include "phalanx/core/dtype.hpp"
#include "phalanx/core/shape.hpp"

namespace phalanx {

class Tensor {
 public:
  Tensor() = default;
  Tensor(Allocator& allocator, Shape shape, DType dtype = DType::Float32);
  ~Tensor();
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  float* data() { return static_cast<float*>(data_); }
  const float* data() const { return static_cast<const float*>(data_); }
  template <typename T>
  T* data_as() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data_as() const {
    return static_cast<const T*>(data_);
  }

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  std::int64_t elements() const { return shape_.elements(); }
  std::size_t bytes() const { return static_cast<std::size_t>(elements()) * dtype_size(dtype_); }
  std::size_t capacity_bytes() const { return capacity_bytes_; }
  bool empty() const { return data_ == nullptr; }
  Allocator* allocator() const { return allocator_; }

  // Changes the shape in place; the new shape must fit the allocated capacity.
  void reshape(Shape shape);
  // Reshape when it fits, reallocate when it does not (contents are then undefined).
  void ensure(Allocator& allocator, Shape shape, DType dtype = DType::Float32);

 private:
  void release() noexcept;

  Allocator* allocator_ = nullptr;
  void* data_ = nullptr;
  std::size_t capacity_bytes_ = 0;
  Shape shape_;
  DType dtype_ = DType::Float32;
};

}  // namespace phalanx
