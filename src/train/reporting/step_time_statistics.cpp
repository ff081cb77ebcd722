// Step-time percentiles per rank and the skew between ranks (summary.json, the report).
#include "reporting/step_time_statistics.hpp"

#include <algorithm>
#include <cmath>

namespace phalanx::train {

nlohmann::json StepTimeStatistics::to_json() const {
  nlohmann::json result = {{"steps", seconds_.size()}};
  if (seconds_.empty()) return result;
  std::vector<double> sorted = seconds_;
  std::sort(sorted.begin(), sorted.end());
  const auto percentile = [&](double fraction) {
    const auto rank = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(sorted.size())));
    return 1000.0 * sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
  };
  double sum = 0;
  for (const double value : sorted) sum += value;
  result["mean_ms"] = 1000.0 * sum / static_cast<double>(sorted.size());
  result["min_ms"] = 1000.0 * sorted.front();
  result["p50_ms"] = percentile(0.50);
  result["p90_ms"] = percentile(0.90);
  result["p99_ms"] = percentile(0.99);
  result["max_ms"] = 1000.0 * sorted.back();
  return result;
}

nlohmann::json step_time_skew(const nlohmann::json& ranks) {
  int slowest = -1, fastest = -1;
  double slowest_median = 0, fastest_median = 0;
  for (const auto& entry : ranks) {
    if (!entry.contains("step_time_ms") || !entry["step_time_ms"].contains("p50_ms")) continue;
    const double median = entry["step_time_ms"]["p50_ms"].get<double>();
    const int rank = entry.value("rank", -1);
    if (slowest < 0 || median > slowest_median) slowest = rank, slowest_median = median;
    if (fastest < 0 || median < fastest_median) fastest = rank, fastest_median = median;
  }
  if (slowest < 0) return nlohmann::json::object();
  return {{"slowest_rank", slowest},
          {"slowest_p50_ms", slowest_median},
          {"fastest_rank", fastest},
          {"fastest_p50_ms", fastest_median},
          {"p50_ratio", fastest_median > 0 ? slowest_median / fastest_median : 1.0}};
}

}  // namespace phalanx::train
