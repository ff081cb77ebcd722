// The heterogeneous dispatch rule (see dispatch.hpp).
#include "phalanx/sweep/dispatch.hpp"

#include <algorithm>

namespace phalanx::sweep {

double effective_speed(const GroupState& group, const std::vector<GroupState>& groups) {
  if (group.speed > 0) return group.speed;
  std::vector<double> cpu, all;
  for (const auto& other : groups) {
    if (other.speed <= 0) continue;
    all.push_back(other.speed);
    if (!other.gpu) cpu.push_back(other.speed);
  }
  if (group.gpu) return all.empty() ? 1e6 : 10.0 * *std::max_element(all.begin(), all.end());
  if (cpu.empty()) return 1.0;
  std::sort(cpu.begin(), cpu.end());
  return cpu[cpu.size() / 2];
}

namespace {
// Waiting for a faster group is a bet on estimates (its busy time left, both groups' speeds, all
// measured with noise), so it is made only when it saves at least this share of the job's time
// here. Without it, a 4-rank sweep on two cores left a promotion to a group 14% "faster" for a
// predicted 1% gain, and the trial started 87 s late (docs/BENCHMARKS.md, "Sweeps: no idle tail").
constexpr double minimum_saving = 0.1;
}  // namespace

int choose_job(const std::vector<Candidate>& candidates, const std::vector<GroupState>& groups, int asking,
               DispatchEstimate* estimate) {
  const GroupState& self = groups.at(static_cast<std::size_t>(asking));
  const double own_speed = effective_speed(self, groups);
  // Work already left to each faster group during this walk, in seconds.
  std::vector<double> reserved(groups.size(), 0.0);
  for (std::size_t index = 0; index < candidates.size(); ++index) {
    const Candidate& candidate = candidates[index];
    const double own_seconds = candidate.cost / own_speed;
    if (estimate) *estimate = DispatchEstimate{own_seconds, -1, estimate->passed_over};
    if (candidate.job.rung == 0) return static_cast<int>(index);
    int best_other = -1;
    double best_finish = own_seconds * (1.0 - minimum_saving);
    for (std::size_t other = 0; other < groups.size(); ++other) {
      if (static_cast<int>(other) == asking) continue;
      const double speed = effective_speed(groups[other], groups);
      // Only a busy, faster group can be waited for: a free one would have asked already.
      if (!groups[other].busy || speed <= own_speed) continue;
      const double finish = groups[other].busy_seconds_left + reserved[other] + candidate.cost / speed;
      if (estimate && (estimate->faster_group_seconds < 0 || finish < estimate->faster_group_seconds))
        estimate->faster_group_seconds = finish;
      if (finish < best_finish) {
        best_finish = finish;
        best_other = static_cast<int>(other);
      }
    }
    if (best_other < 0) return static_cast<int>(index);
    if (estimate) ++estimate->passed_over;
    reserved[static_cast<std::size_t>(best_other)] +=
        candidate.cost / effective_speed(groups[best_other], groups);
  }
  return -1;
}

int choose_join(const std::vector<RunningJob>& running, bool idle_gpu, double min_seconds) {
  int best = -1;
  for (std::size_t index = 0; index < running.size(); ++index) {
    const RunningJob& job = running[index];
    if (!job.joinable || job.gpu != idle_gpu || job.seconds_left < min_seconds) continue;
    if (best < 0) {
      best = static_cast<int>(index);
      continue;
    }
    const RunningJob& chosen = running[static_cast<std::size_t>(best)];
    if (job.seconds_left > chosen.seconds_left ||
        (job.seconds_left == chosen.seconds_left && job.trial < chosen.trial))
      best = static_cast<int>(index);
  }
  return best;
}

void MergedSpeed::record(double units, double seconds, double summed_speed) {
  if (!(units > 0) || !(seconds > 0) || !(summed_speed > 0)) return;
  units_ += units;
  promised_units_ += seconds * summed_speed;
}

double MergedSpeed::efficiency() const {
  return promised_units_ > 0 ? units_ / promised_units_ : 1.0;
}

double MergedSpeed::speed(double summed_speed, int groups) const {
  return groups > 1 ? summed_speed * efficiency() : summed_speed;
}

double seconds_left_after_join(double seconds_left, double summed_speed, int groups, double joining_speed,
                               int joining_groups, const MergedSpeed& merged) {
  const double before = merged.speed(summed_speed, groups);
  const double after = merged.speed(summed_speed + joining_speed, groups + joining_groups);
  return after > 0 ? seconds_left * before / after : seconds_left;
}

}  // namespace phalanx::sweep
