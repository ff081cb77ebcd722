// StepTimeStatistics: the distribution of one rank's step times (percentiles), and the skew
// between ranks built from them. In a synchronous data-parallel job every rank waits for the
// slowest at each all-reduce, so one slow rank (a busy node, a throttled GPU) shows up as a high
// tail on its own step times and as all-reduce wait on everybody else's.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace phalanx::train {

class StepTimeStatistics {
 public:
  void add(double seconds) { seconds_.push_back(seconds); }
  std::size_t count() const { return seconds_.size(); }
  // {"steps", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms", "min_ms"}; percentiles by the
  // nearest-rank method, so every value is a step time that happened.
  nlohmann::json to_json() const;

 private:
  std::vector<double> seconds_;
};

// From summary.json's ranks[] entries (each with "step_time_ms" from to_json and "rank"): the
// slowest and fastest rank by median step time and their ratio.
nlohmann::json step_time_skew(const nlohmann::json& ranks);

}  // namespace phalanx::train
