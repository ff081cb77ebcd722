// Softmax cross-entropy with label smoothing (torch.nn.CrossEntropyLoss semantics) and prediction
// (arg-max, softmax) on the device, with the CPU backend's arithmetic: per-row sums in double
// around the row maximum, the first maximum as arg-max. One warp per row; the batch totals are
// reduced on the device in a fixed order and only two numbers come back to the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_buffer.hpp"
#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

class CrossEntropy {
 public:
  CrossEntropy();

  // Synchronises `stream`: the totals are host values. Throws when a label is outside [0, classes).
  LossTotals softmax_cross_entropy(cudaStream_t stream, int batch, int classes, const float* logits,
                                   const std::int32_t* labels, float label_smoothing, float gradient_scale,
                                   float* grad_logits);
  // Asynchronous: writes device memory only.
  void predict(cudaStream_t stream, int batch, int classes, const float* logits,
               std::int32_t* predicted_class, float* probabilities);

 private:
  DeviceBuffer sample_loss_;     // double per sample
  DeviceBuffer sample_outcome_;  // uint8 per sample: 0 wrong, 1 correct, 2 label out of range
  DeviceBuffer device_totals_;
  PinnedBuffer host_totals_;  // page-locked, so the two numbers come back with one small DMA
};

}  // namespace phalanx::backend::cuda
