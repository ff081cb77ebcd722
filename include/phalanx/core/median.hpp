// The median of repeated timings: what benchmarks quote on a noisy shared machine.
#pragma once

#include <algorithm>
#include <vector>

namespace phalanx {

// The middle value (the upper one of an even count); `values` must not be empty.
inline double median(std::vector<double> values) {
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace phalanx
