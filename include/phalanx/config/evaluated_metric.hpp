// The metrics an evaluation records, by name: what train.early_stop.metric and
// checkpoint.keep_best may watch. Accuracies improve upwards, losses downwards; the ema_ forms are
// those of the weight average (train.ema).
#pragma once

#include <optional>
#include <string>

namespace phalanx::config {

struct EvaluatedMetric {
  std::string name;              // as written: "ema_test_top5_accuracy"
  bool of_average = false;       // an ema_ metric: needs train.ema
  std::optional<int> top_k;      // a test_top<k>_accuracy: needs k among the reported top-k
  bool higher_is_better = true;  // accuracies; losses are better lower
};

// test_accuracy, test_loss, train_loss, test_top<k>_accuracy, and ema_test_accuracy,
// ema_test_loss, ema_test_top<k>_accuracy; nothing for any other name.
std::optional<EvaluatedMetric> evaluated_metric(const std::string& name);

// The names evaluated_metric knows, for a message ("test_accuracy, test_loss, ...").
std::string evaluated_metric_names();

}  // namespace phalanx::config
