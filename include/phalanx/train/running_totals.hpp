// The running sums behind a run's reported losses, one rank's share: the epoch's (its train_loss)
// and the log interval's (a step event's loss and accuracy). A checkpoint keeps every rank's, so a
// run resumed in the middle of an epoch or interval reports what the uninterrupted run reports.
#pragma once

#include <cstdint>
#include <vector>

#include "phalanx/comm/communicator.hpp"

namespace phalanx::train {

// Each rank adds its own steps in order and the ranks' sums are all-reduced only when reported,
// so restoring each rank's partial sums continues the very same additions: same bits.
struct RunningTotals {
  double epoch_loss_sum = 0;
  std::int64_t epoch_samples = 0;
  double interval_loss_sum = 0;
  std::int64_t interval_correct = 0;
  std::int64_t interval_samples = 0;

  bool operator==(const RunningTotals&) const = default;
};

// Collective: every rank's totals in rank order, on every rank. A gather, not a sum: exact.
std::vector<RunningTotals> gather_running_totals(const comm::Communicator& communicator,
                                                 const RunningTotals& mine);

// A checkpoint's per-rank totals as one rank's, for a resume on another number of ranks: the
// counts add exactly, the loss sums add in rank order (a different summation order than the
// all-reduce of the straight run, so the reported losses agree to double rounding, not bitwise).
// The resumed rank 0 continues these; the other resumed ranks start from zero.
RunningTotals merge_running_totals(const std::vector<RunningTotals>& every_rank);

}  // namespace phalanx::train
