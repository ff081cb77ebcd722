// Element types a Tensor can hold.
#pragma once

#include <cstddef>
#include <string>

namespace phalanx {

enum class DType { Float32, Int32, UInt8 };

std::size_t dtype_size(DType dtype);
std::string dtype_name(DType dtype);

}  // namespace phalanx
