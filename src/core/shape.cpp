// Shape arithmetic and printing.
#include "phalanx/core/shape.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx {

std::int64_t Shape::elements() const {
  std::int64_t count = 1;
  for (auto dim : dims_) count *= dim;
  return count;
}

std::int64_t Shape::sample_elements() const {
  PHALANX_CHECK(!dims_.empty(), "sample_elements of a scalar shape");
  std::int64_t count = 1;
  for (std::size_t axis = 1; axis < dims_.size(); ++axis) count *= dims_[axis];
  return count;
}

Shape Shape::with_batch(std::int64_t batch) const {
  PHALANX_CHECK(!dims_.empty(), "with_batch on a scalar shape");
  Shape result = *this;
  result.dims_[0] = batch;
  return result;
}

Shape Shape::batched(std::int64_t batch) const {
  std::vector<std::int64_t> dims{batch};
  dims.insert(dims.end(), dims_.begin(), dims_.end());
  return Shape(std::move(dims));
}

std::string Shape::to_string() const {
  std::string text = "[";
  for (std::size_t axis = 0; axis < dims_.size(); ++axis) {
    if (axis) text += ", ";
    text += std::to_string(dims_[axis]);
  }
  return text + "]";
}

}  // namespace phalanx
