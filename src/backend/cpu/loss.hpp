// Softmax cross-entropy with label smoothing (torch.nn.CrossEntropyLoss semantics) and
// prediction (arg-max, softmax) for the CPU backend, over fp32 or bf16 logits; the loss and the
// probabilities are computed in fp32 (double inside) either way.
#pragma once

#include <cstdint>
#include <vector>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend::cpu {

class CrossEntropy {
 public:
  // How logits and their gradient are held: fp32 (the default) or bf16.
  void set_storage(ComputePrecision precision);

  // With `mix` (partner labels in host memory), the mixed-target loss of LabelMix.
  LossTotals softmax_cross_entropy(int batch, int classes, const float* logits, const std::int32_t* labels,
                                   float label_smoothing, float gradient_scale, float* grad_logits,
                                   const LabelMix& mix = {});
  void predict(int batch, int classes, const float* logits, std::int32_t* predicted_class,
               float* probabilities);

 private:
  LossTotals softmax_cross_entropy_fp32(int batch, int classes, const float* logits,
                                        const std::int32_t* labels, float label_smoothing,
                                        float gradient_scale, float* grad_logits, const LabelMix& mix);
  // The logits as fp32: themselves, or (bf16 storage) widened into widened_logits_.
  const float* widened_logits(std::int64_t count, const float* logits);

  ComputePrecision storage_ = ComputePrecision::Float32;
  std::vector<float> widened_logits_, widened_grad_logits_;
  // Per-sample results, summed in sample order afterwards so the totals do not depend on how
  // rows were split over threads. Grows to the largest batch seen.
  std::vector<double> sample_loss_;
  std::vector<std::uint8_t> sample_correct_;
};

}  // namespace phalanx::backend::cpu
