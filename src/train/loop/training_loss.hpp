// TrainingLoss: the loss a step trains on (softmax cross-entropy with train.label_smoothing, against
// the mixed targets of train.mixup on a mixed step), with its gradient in one call. Each sample is
// weighted 1/global batch x the loss scale, so the summed gradients of all ranks are one step at
// the global batch; the loss totals stay where they were computed (on a GPU, until the
// bookkeeping waits for the device anyway).
#pragma once

#include <cstdint>

#include "phalanx/backend/backend.hpp"
#include "phalanx/core/tensor.hpp"

namespace phalanx::train {

class TrainingLoss {
 public:
  TrainingLoss(backend::Backend& backend, int classes, float label_smoothing)
      : backend_(backend), classes_(classes), label_smoothing_(label_smoothing) {}

  // grad_logits [samples, classes] of the loss over `samples` rows of `logits` and their `labels`
  // (device memory), each weighted `sample_weight`; `mix`: the step's mixed targets, if any.
  void forward_backward(const Tensor& logits, const std::int32_t* labels, int samples, float sample_weight,
                        Tensor& grad_logits, const backend::LabelMix& mix = {}) const {
    backend_.softmax_cross_entropy_deferred(samples, classes_, logits.data(), labels, label_smoothing_,
                                            sample_weight, grad_logits.data(), mix);
  }

 private:
  backend::Backend& backend_;
  int classes_;
  float label_smoothing_;
};

}  // namespace phalanx::train
