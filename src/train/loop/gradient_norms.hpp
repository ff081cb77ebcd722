// The gradient norms before clipping (train.clip_grad_norm) that metrics.jsonl reports as
// grad_norm: their mean and largest over an epoch (epoch events) and over a log interval (step
// events). Every rank clips the same summed gradients, so every rank records the same norms.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace phalanx::train {

struct GradientNorms {
  double sum = 0;
  double max = 0;
  std::int64_t updates = 0;

  void add(double norm) {
    sum += norm;
    max = std::max(max, norm);
    ++updates;
  }
  // {"mean": ..., "max": ...}; null when no update was clipped (clipping off, or all skipped).
  nlohmann::json to_json() const {
    if (updates == 0) return nullptr;
    return {{"mean", sum / static_cast<double>(updates)}, {"max", max}};
  }
};

struct GradientNormRecord {
  GradientNorms epoch;
  GradientNorms interval;  // since the last step event

  void add(double norm) {
    epoch.add(norm);
    interval.add(norm);
  }
};

}  // namespace phalanx::train
