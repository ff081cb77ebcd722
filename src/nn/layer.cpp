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

void Layer::require_sample_fits(std::int64_t height, std::int64_t width, std::int64_t channels) const {
  constexpr std::int64_t largest = std::numeric_limits<int>::max();
  const bool fits = height <= largest && width <= largest && channels <= largest &&
                    height * width <= largest && height * width * channels <= largest;
  PHALANX_REQUIRE_INPUT(fits, "layer '", name(), "': its output of ", height, "x", width, "x", channels,
                        " per sample is more than the 2^31 - 1 elements a layer may produce ",
                        "(the model does not fit the data: check its padding, kernel and out_channels)");
}

void Layer::require_stride_within(std::int64_t padded_height, std::int64_t padded_width, int stride,
                                  int padding) const {
  PHALANX_REQUIRE_INPUT(std::max(padded_height, padded_width) <= std::numeric_limits<int>::max(), "layer '",
                        name(), "': padding ", padding, " makes its input larger than 2^31 - 1 a side");
  const std::int64_t largest = std::max(padded_height, padded_width);
  PHALANX_REQUIRE_INPUT(stride <= largest, "layer '", name(), "': stride ", stride, " is larger than its ",
                        padded_height - 2 * std::int64_t{padding}, "x",
                        padded_width - 2 * std::int64_t{padding}, " input with padding ", padding,
                        "; a stride of ", largest, " already gives one output per row and column");
}

}  // namespace phalanx::nn
