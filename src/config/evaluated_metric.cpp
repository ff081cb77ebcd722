// Metric names of an evaluation (evaluated_metric.hpp): the names metrics.jsonl's eval events and
// summary.json use, parsed once so that the config check and the trainer agree on them.
#include "phalanx/config/evaluated_metric.hpp"

#include "phalanx/config/sweep_config.hpp"

namespace phalanx::config {

std::optional<EvaluatedMetric> evaluated_metric(const std::string& name) {
  EvaluatedMetric metric;
  metric.name = name;
  std::string base = name;
  const std::string average_prefix = "ema_";
  if (base.starts_with(average_prefix)) {
    metric.of_average = true;
    base = base.substr(average_prefix.size());
  }
  if (base == "test_accuracy") return metric;
  if (base == "test_loss" || (base == "train_loss" && !metric.of_average)) {
    metric.higher_is_better = false;
    return metric;
  }
  metric.top_k = top_k_of_metric(base);
  if (metric.top_k) return metric;
  return std::nullopt;
}

std::string evaluated_metric_names() {
  return "test_accuracy, test_loss, test_top<k>_accuracy, train_loss, and with train.ema ema_test_accuracy, "
         "ema_test_loss, ema_test_top<k>_accuracy";
}

}  // namespace phalanx::config
