// Heterogeneous dispatch: which of ASHA's candidate jobs a free worker group takes. Groups differ
// in speed (a GPU group, a 2-thread CPU rank, a 1-thread CPU rank), and ASHA alone would let the
// slowest group grab the most expensive job, holding the top rung hostage. The rule
// (docs/SWEEPS.md): a free group walks the candidates in ASHA's order and takes
//   - rung-0 work (a new trial, or one requeued after a kill) always: the cheap, exploratory work, so slow
//   groups never sit idle (a trial that asha.brackets starts higher is weighed as a promotion is:
//   its first job costs its rung's whole budget);
//   - a promotion only if no faster group is expected to finish it sooner, where a faster group's
//     finish time is the rest of its current job plus the promotions already left to it in this
//     walk plus the job's cost at its speed.
// Any group can continue any trial: a checkpoint resumes on a group of another size with its
// global batch (docs/CHECKPOINTS.md, elastic resume). When it takes nothing it waits; a group passed over
// always leaves its job to a faster group that is busy, and that group takes it when it asks next, so nothing
// waits forever.
#pragma once

#include <vector>

#include "phalanx/sweep/asha.hpp"

namespace phalanx::sweep {

struct GroupState {
  int worker = 0;
  bool gpu = false;
  double speed = 0;              // measured budget units per second (0: not measured yet)
  double busy_seconds_left = 0;  // expected rest of its current job (0 when free)
  bool busy = false;
};

struct Candidate {
  Job job;
  double cost = 0;  // budget units the job trains
};

// The speed used for decisions: measured when known; an unmeasured GPU group counts as faster
// than every CPU group, an unmeasured CPU group as the median of the measured CPU groups (1 when
// none is measured), so the first jobs go out without waiting for measurements.
double effective_speed(const GroupState& group, const std::vector<GroupState>& groups);

// Why a job went where it went, stored with the job so a user (and a test) can check the rule.
struct DispatchEstimate {
  double own_seconds = 0;            // the chosen job's expected time on the asking group
  double faster_group_seconds = -1;  // best expected finish on a busy faster group (-1: none)
  int passed_over = 0;               // promotions left to faster groups before this choice
};

// Index into `candidates` of the job `groups[asking]` should take now, or -1 to wait.
int choose_job(const std::vector<Candidate>& candidates, const std::vector<GroupState>& groups, int asking,
               DispatchEstimate* estimate = nullptr);

// No idle tail: a free group that choose_job() gave nothing joins a running trial instead of
// waiting (docs/SWEEPS.md). The trial stops after its next step with a checkpoint and continues on
// the merged ranks with the same global batch (an elastic resume), so its trajectory does not
// change; only where its remaining steps run does.
struct RunningJob {
  int leader = 0;  // the group whose leader reports the job
  int trial = 0;
  int ranks = 1;            // ranks training it, counting groups already on their way to join it
  double seconds_left = 0;  // expected rest of the job on those ranks
  bool joinable = false;    // every group training it of one kind (GPU or CPU)
  bool gpu = false;         // trained by GPU groups (over NCCL), not CPU groups (over MPI)
};

// Index into `running` of the job an idle group (of GPU ranks when `idle_gpu`) should join, or -1
// to wait: the joinable job of its own kind with the most seconds left (ties: the lower trial id),
// if that is at least `min_seconds` (a join costs a checkpoint and a resume: not worth it for a job
// about to end). Kinds never mix: merged GPU groups sum
// gradients over one NCCL communicator, and a CPU rank in it would hold every GPU step to its pace (and to
// host-staged MPI all-reduces).
int choose_join(const std::vector<RunningJob>& running, bool idle_gpu, double min_seconds);

// A merged job's speed (budget units per second): the sum of its groups' speeds times the share
// of such sums that this sweep's merged jobs have achieved so far (1 until one has ended). Ranks
// that share cores (an oversubscribed node: four ranks on two cores train a merged trial no faster
// than two), all-reduces over more ranks and each join's checkpoint and resume make a merged job
// slower than the sum, by an amount only the sweep's own merged jobs tell: without it the
// coordinator promised "35 s left on 3 ranks" for a job that took 87 s on 4, and left a promotion
// waiting on that promise (docs/BENCHMARKS.md, "Sweeps: no idle tail").
class MergedSpeed {
 public:
  // One merged job (or the part of it before a handover): `units` trained in `seconds`, by groups
  // whose own speeds add up to `summed_speed`.
  void record(double units, double seconds, double summed_speed);
  // Budget units trained over units the summed speeds promised in the same time; 1 when unmeasured.
  double efficiency() const;
  bool measured() const { return promised_units_ > 0; }
  // The speed of `groups` groups whose own speeds add up to `summed_speed` (a lone group: its own).
  double speed(double summed_speed, int groups) const;

 private:
  double units_ = 0;
  double promised_units_ = 0;
};

// The expected rest of `job`, trained by `groups` groups whose speeds add up to `summed_speed`,
// once groups with `joining_speed` more (`joining_groups` of them) have joined it.
double seconds_left_after_join(double seconds_left, double summed_speed, int groups, double joining_speed,
                               int joining_groups, const MergedSpeed& merged);

}  // namespace phalanx::sweep
