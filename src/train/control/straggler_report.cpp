// StragglerReport: one allgather of a double per log interval.
#include "control/straggler_report.hpp"

#include <algorithm>

namespace phalanx::train {

StragglerSummary summarise_stragglers(const std::vector<double>& rank_ms) {
  StragglerSummary summary;
  summary.rank_ms = rank_ms;
  if (rank_ms.empty()) return summary;
  const auto slowest = std::max_element(rank_ms.begin(), rank_ms.end());
  summary.slowest_rank = static_cast<int>(slowest - rank_ms.begin());
  summary.slowest_ms = *slowest;
  std::vector<double> sorted = rank_ms;
  std::sort(sorted.begin(), sorted.end());
  summary.median_ms = sorted[(sorted.size() - 1) / 2];
  summary.ratio = summary.median_ms > 0 ? summary.slowest_ms / summary.median_ms : 1.0;
  return summary;
}

void StragglerReport::add_step(double busy_seconds) {
  busy_seconds_ += busy_seconds;
  ++steps_;
}

std::optional<StragglerSummary> StragglerReport::close_interval(const comm::Communicator& communicator) {
  const double mean_ms = steps_ > 0 ? 1000.0 * busy_seconds_ / static_cast<double>(steps_) : 0.0;
  const auto rank_ms = communicator.allgather(mean_ms);
  const bool had_steps = steps_ > 0;
  busy_seconds_ = 0;
  steps_ = 0;
  if (communicator.rank() != 0 || !had_steps) return std::nullopt;
  return summarise_stragglers(rank_ms);
}

}  // namespace phalanx::train
