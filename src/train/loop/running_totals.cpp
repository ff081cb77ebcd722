// Gathers the ranks' running loss totals for a checkpoint (only rank 0 writes it), and merges a
// checkpoint's totals when it resumes on another number of ranks.
#include "phalanx/train/running_totals.hpp"

namespace phalanx::train {

std::vector<RunningTotals> gather_running_totals(const comm::Communicator& communicator,
                                                 const RunningTotals& mine) {
  // Five one-value gathers: checkpoints are rare, and each value keeps its own exact type.
  const auto epoch_loss_sums = communicator.allgather(mine.epoch_loss_sum);
  const auto epoch_samples = communicator.allgather(static_cast<std::uint64_t>(mine.epoch_samples));
  const auto interval_loss_sums = communicator.allgather(mine.interval_loss_sum);
  const auto interval_correct = communicator.allgather(static_cast<std::uint64_t>(mine.interval_correct));
  const auto interval_samples = communicator.allgather(static_cast<std::uint64_t>(mine.interval_samples));
  std::vector<RunningTotals> totals(epoch_loss_sums.size());
  for (std::size_t rank = 0; rank < totals.size(); ++rank)
    totals[rank] = {epoch_loss_sums[rank], static_cast<std::int64_t>(epoch_samples[rank]),
                    interval_loss_sums[rank], static_cast<std::int64_t>(interval_correct[rank]),
                    static_cast<std::int64_t>(interval_samples[rank])};
  return totals;
}

RunningTotals merge_running_totals(const std::vector<RunningTotals>& every_rank) {
  RunningTotals merged;
  for (const auto& totals : every_rank) {
    merged.epoch_loss_sum += totals.epoch_loss_sum;
    merged.epoch_samples += totals.epoch_samples;
    merged.interval_loss_sum += totals.interval_loss_sum;
    merged.interval_correct += totals.interval_correct;
    merged.interval_samples += totals.interval_samples;
  }
  return merged;
}

}  // namespace phalanx::train
