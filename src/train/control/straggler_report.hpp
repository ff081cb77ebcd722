// StragglerReport: in a synchronous data-parallel job every rank waits for the slowest one at
// each all-reduce, so one slow node (thermal throttling, a noisy neighbour, a slow disk) slows
// the whole job without any error. Each rank sums its busy time per step (the step minus the time
// it waited for the others); every log interval the ranks gather it and rank 0 names the slowest
// rank and how it compares with the median, so a slow node shows before it costs an hour.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "phalanx/comm/communicator.hpp"

namespace phalanx::train {

// A slowest rank this much slower than the median is also printed, not only recorded.
constexpr double straggler_print_ratio = 1.5;

struct StragglerSummary {
  int slowest_rank = 0;
  double slowest_ms = 0;  // mean busy milliseconds per step of the interval
  double median_ms = 0;
  double ratio = 1;  // slowest / median
  std::vector<double> rank_ms;
};

// The slowest rank and the median of per-rank busy milliseconds per step (the lower middle value
// for an even count, so that with two ranks the median is the faster one and the ratio shows the gap).
StragglerSummary summarise_stragglers(const std::vector<double>& rank_ms);

class StragglerReport {
 public:
  void add_step(double busy_seconds);
  // Collective: every rank calls it at the same step. Rank 0 gets the interval's summary (when
  // the interval had steps); the others get nothing.
  std::optional<StragglerSummary> close_interval(const comm::Communicator& communicator);

 private:
  double busy_seconds_ = 0;
  std::int64_t steps_ = 0;
};

}  // namespace phalanx::train
