// Softmax cross-entropy with label smoothing (torch.nn.CrossEntropyLoss semantics) and
// prediction (arg-max, softmax) for the CPU backend.
#pragma once

#include <cstdint>
#include <vector>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cpu {

class CrossEntropy {
 public:
  LossTotals softmax_cross_entropy(int batch, int classes, const float* logits, const std::int32_t* labels,
                                   float label_smoothing, float gradient_scale, float* grad_logits);
  void predict(int batch, int classes, const float* logits, std::int32_t* predicted_class,
               float* probabilities);

 private:
  // Per-sample results, summed in sample order afterwards so the totals do not depend on how
  // rows were split over threads. Grows to the largest batch seen.
  std::vector<double> sample_loss_;
  std::vector<std::uint8_t> sample_correct_;
};

}  // namespace phalanx::backend::cpu
