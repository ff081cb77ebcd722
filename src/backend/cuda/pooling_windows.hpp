// Window arithmetic of the pooling kernels along one axis, for the host and the device: which
// input positions an output's window covers (forward) and which outputs' windows cover an input
// position (backward, which gathers instead of scattering with atomics). Host tests check the
// second against a brute-force scan of the first.
#pragma once

#include "host_device.hpp"

namespace phalanx::backend::cuda {

// Output `out` covers input positions out * stride - padding + [0, kernel); positions outside
// [0, size) are padding.
PHALANX_HOST_DEVICE inline int window_start(int out, int stride, int padding) {
  return out * stride - padding;
}

// The outputs whose windows cover input `position`: first..last inclusive (empty when first > last).
// Windows are out * stride <= position + padding <= out * stride + kernel - 1.
PHALANX_HOST_DEVICE inline void covering_outputs(int position, int padding, int kernel, int stride,
                                                 int out_size, int& first, int& last) {
  const int padded = position + padding;
  first = padded - kernel + 1 <= 0 ? 0 : (padded - kernel + 1 + stride - 1) / stride;
  last = padded / stride;
  if (last > out_size - 1) last = out_size - 1;
}

}  // namespace phalanx::backend::cuda
