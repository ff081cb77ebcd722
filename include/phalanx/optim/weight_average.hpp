// WeightAverage: an exponential moving average of a model's parameters and batch-norm buffers
// (train.ema), as torchvision's ExponentialMovingAverage with use_buffers=True, with timm's decay
// warm-up. It lives on the rank's device beside the weights; data-parallel ranks hold the same
// weights, so each rank keeps its own average and no communication is needed to update it.
#pragma once

#include <cstdint>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/tensor.hpp"
#include "phalanx/nn/parameter_registry.hpp"

namespace phalanx::optim {

// The decay of update number `updates_so_far` + 1: `decay`, or with warm-up
// min(decay, (1 + u) / (10 + u)) for u = updates_so_far, so early averages follow the weights.
double weight_average_decay(const config::EmaConfig& settings, std::int64_t updates_so_far);

class WeightAverage {
 public:
  // Starts as a copy of the registry's parameters and buffers (the weights training starts from).
  WeightAverage(const config::EmaConfig& settings, backend::Backend& backend,
                nn::ParameterRegistry& registry);

  // After optimizer step `global_step` (1-based: the number of steps taken): updates the average
  // when the step is a multiple of every_steps. Returns whether it did.
  bool after_step(std::int64_t global_step);
  // One update from the registry's current weights and buffers with the decay of the next update.
  void update();

  std::int64_t updates() const { return updates_; }
  // A checkpoint's average and its update count (the tensors copied in already by the caller).
  void set_updates(std::int64_t updates) { updates_ = updates; }
  Tensor& parameters() { return parameters_; }
  Tensor& buffers() { return buffers_; }
  const config::EmaConfig& settings() const { return settings_; }

  // Exchanges the average with the registry's weights and buffers (twice: back as they were), so
  // the model evaluates the average without a second model. The scratch copy is made once.
  void exchange_with_registry();

 private:
  config::EmaConfig settings_;
  backend::Backend& backend_;
  nn::ParameterRegistry& registry_;
  Tensor parameters_, buffers_;
  Tensor scratch_;  // for the exchange: the larger of the two flat buffers
  std::int64_t updates_ = 0;
};

// While alive, the registry holds the average's weights and buffers (the evaluation of the average).
class AverageInModel {
 public:
  explicit AverageInModel(WeightAverage& average) : average_(average) { average_.exchange_with_registry(); }
  ~AverageInModel() { average_.exchange_with_registry(); }
  AverageInModel(const AverageInModel&) = delete;
  AverageInModel& operator=(const AverageInModel&) = delete;

 private:
  WeightAverage& average_;
};

}  // namespace phalanx::optim
