// The improvement rule of train.early_stop and checkpoint.keep_best (metric_watch.hpp), the rule
// of PyTorch Lightning's EarlyStopping and Keras': better than the best by more than min_delta
// resets the count, anything else adds one.
#include "phalanx/train/metric_watch.hpp"

#include <cmath>

#include "phalanx/core/error.hpp"

namespace phalanx::train {

MetricWatch::MetricWatch(const std::string& metric, double min_delta) : min_delta_(min_delta) {
  const auto known = config::evaluated_metric(metric);
  PHALANX_CHECK(known.has_value(), "watching an unknown metric ", metric);
  metric_ = *known;
  state_.metric = metric;
}

bool MetricWatch::observe(double value, std::int64_t epoch) {
  const bool improved = !std::isnan(value) &&
                        (!state_.evaluated || (metric_.higher_is_better ? value > state_.best + min_delta_
                                                                        : value < state_.best - min_delta_));
  if (!improved) {
    ++state_.evaluations_since_best;
    return false;
  }
  state_.evaluated = true;
  state_.best = value;
  state_.best_epoch = epoch;
  state_.evaluations_since_best = 0;
  return true;
}

void MetricWatch::restore(const MetricWatchState& state) {
  if (state.metric == state_.metric) state_ = state;
}

}  // namespace phalanx::train
