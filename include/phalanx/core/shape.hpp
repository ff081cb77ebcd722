// Shape: the dimensions of a tensor. Activations are NHWC ([batch, height, width, channels]),
// matching the HDF5 dataset layout; parameters keep PyTorch's layouts (docs/DESIGN.md §4).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace phalanx {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

  std::size_t rank() const { return dims_.size(); }
  std::int64_t operator[](std::size_t axis) const { return dims_.at(axis); }
  std::int64_t& operator[](std::size_t axis) { return dims_.at(axis); }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::int64_t elements() const;
  // Elements of one sample: the product of all dimensions but the first.
  std::int64_t sample_elements() const;
  // Replaces the first dimension (the batch of a batched shape).
  Shape with_batch(std::int64_t batch) const;
  // Prepends a batch dimension to a per-sample shape.
  Shape batched(std::int64_t batch) const;
  std::string to_string() const;
  bool operator==(const Shape& other) const = default;

 private:
  std::vector<std::int64_t> dims_;
};

}  // namespace phalanx
