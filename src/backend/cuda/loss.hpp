// Softmax cross-entropy with label smoothing (torch.nn.CrossEntropyLoss semantics), with mixed
// targets (LabelMix) for mixup and CutMix, and prediction
// (arg-max, softmax) on the device, with the CPU backend's arithmetic: per-row sums in double
// around the row maximum, the first maximum as arg-max. One warp per row; the batch totals are
// reduced on the device in a fixed order and only two numbers come back to the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "device_buffer.hpp"
#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cuda {

class CrossEntropy {
 public:
  CrossEntropy();

  // The type the logits and their gradient are held in (Backend::set_activation_precision); the
  // sums run in double and read the widened values either way.
  void set_storage(ComputePrecision storage) { storage_ = storage; }

  // Synchronises `stream`: the totals are host values. Throws when a label is outside [0, classes).
  LossTotals softmax_cross_entropy(cudaStream_t stream, int batch, int classes, const float* logits,
                                   const std::int32_t* labels, float label_smoothing, float gradient_scale,
                                   float* grad_logits, const LabelMix& mix = {});
  // Asynchronous: the step's totals stay in a device slot (one per call) until take_deferred
  // copies every slot back with one wait; only when all slots are in use does a call wait first.
  void softmax_cross_entropy_deferred(cudaStream_t stream, int batch, int classes, const float* logits,
                                      const std::int32_t* labels, float label_smoothing, float gradient_scale,
                                      float* grad_logits, const LabelMix& mix = {});
  // Synchronises `stream`; the totals of every deferred call since the last take, oldest first.
  // Throws when a label of one of those calls was outside [0, classes).
  std::vector<LossTotals> take_deferred(cudaStream_t stream);
  // Asynchronous: writes device memory only.
  void predict(cudaStream_t stream, int batch, int classes, const float* logits,
               std::int32_t* predicted_class, float* probabilities);

  // Times this object made the host wait for the stream (every synchronous loss, every take, a
  // deferred call that found its slots full): what a test of the step's host waits counts.
  std::int64_t host_waits() const { return host_waits_; }

 private:
  // Queues the two kernels whose totals land in `destination` (device memory).
  void enqueue(cudaStream_t stream, int batch, int classes, const float* logits, const std::int32_t* labels,
               float label_smoothing, float gradient_scale, float* grad_logits, const LabelMix& mix,
               void* destination);
  // Copies the filled deferred slots to the host record (one wait) and frees them.
  void drain_slots(cudaStream_t stream);

  DeviceBuffer sample_loss_;     // double per sample
  DeviceBuffer sample_outcome_;  // uint8 per sample: 0 wrong, 1 correct, 2 label out of range
  DeviceBuffer device_totals_;
  PinnedBuffer host_totals_;  // page-locked, so the two numbers come back with one small DMA
  // Deferred totals: device slots filled in call order, their page-locked mirror, the drained ones.
  DeviceBuffer deferred_slots_;
  PinnedBuffer deferred_host_slots_;
  int deferred_filled_ = 0;
  int deferred_classes_ = 0;  // of the filled slots, for the message about a bad label
  std::vector<LossTotals> deferred_drained_;
  std::int64_t host_waits_ = 0;
  ComputePrecision storage_ = ComputePrecision::Float32;
};

}  // namespace phalanx::backend::cuda
