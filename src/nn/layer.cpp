// The checks every layer with a sliding window or a flat input shares (see layer.hpp).
#include "phalanx/nn/layer.hpp"

#include <limits>

#include "phalanx/core/error.hpp"

namespace phalanx::nn {

void Layer::require_sample_fits(std::int64_t elements) const {
  PHALANX_REQUIRE_INPUT(elements <= std::numeric_limits<int>::max(), "layer '", name(), "': its output of ",
                        elements, " elements per sample is more than the 2^31 - 1 a layer may produce ",
                        "(the model does not fit the data: check its padding, kernel and out_channels)");
}

void Layer::require_stride_within(std::int64_t padded_height, std::int64_t padded_width, int stride,
                                  int padding) const {
  const std::int64_t largest = std::max(padded_height, padded_width);
  PHALANX_REQUIRE_INPUT(stride <= largest, "layer '", name(), "': stride ", stride, " is larger than its ",
                        padded_height - 2 * std::int64_t{padding}, "x",
                        padded_width - 2 * std::int64_t{padding}, " input with padding ", padding,
                        "; a stride of ", largest, " already gives one output per row and column");
}

}  // namespace phalanx::nn
