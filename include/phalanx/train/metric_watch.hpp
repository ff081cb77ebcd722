// MetricWatch: the best value of one evaluated metric so far and how many evaluations have passed
// without improving on it: what train.early_stop decides on and checkpoint.keep_best replaces
// checkpoints/best.h5 on. Its state goes into checkpoints, so a resumed run decides as a straight one.
#pragma once

#include <cstdint>
#include <string>

#include "phalanx/config/evaluated_metric.hpp"

namespace phalanx::train {

// What a checkpoint holds of a watch (/state/early_stop, /state/keep_best).
struct MetricWatchState {
  std::string metric;                       // the watched metric's name
  bool evaluated = false;                   // false until the first evaluation
  double best = 0;                          // the best value so far
  std::int64_t best_epoch = 0;              // the evaluation's epoch (1-based) that gave it
  std::int64_t evaluations_since_best = 0;  // evaluations after it that did not improve on it

  friend bool operator==(const MetricWatchState&, const MetricWatchState&) = default;
};

class MetricWatch {
 public:
  // `metric` must name an evaluated metric (config::evaluated_metric); an improvement is a value
  // better than the best by more than `min_delta` (higher for accuracies, lower for losses).
  MetricWatch(const std::string& metric, double min_delta);

  // Takes the value of the evaluation after epoch `epoch` (1-based); true when it improved on
  // the best (the first value always does; a NaN never does).
  bool observe(double value, std::int64_t epoch);

  const MetricWatchState& state() const { return state_; }
  // A checkpoint's state; one of another metric (the config changed on resume) is not taken.
  void restore(const MetricWatchState& state);

 private:
  config::EvaluatedMetric metric_;
  double min_delta_;
  MetricWatchState state_;
};

// train.early_stop: stop once `patience` evaluations in a row have not improved the metric.
class EarlyStop {
 public:
  EarlyStop(const std::string& metric, int patience, double min_delta)
      : watch_(metric, min_delta), patience_(patience) {}
  // Takes an evaluation; true when training should stop after it.
  bool observe(double value, std::int64_t epoch) {
    watch_.observe(value, epoch);
    return should_stop();
  }
  bool should_stop() const { return watch_.state().evaluations_since_best >= patience_; }
  int patience() const { return patience_; }
  MetricWatch& watch() { return watch_; }
  const MetricWatch& watch() const { return watch_; }

 private:
  MetricWatch watch_;
  int patience_;
};

}  // namespace phalanx::train
