// Population-based training (Jaderberg et al., "Population Based Training of Neural Networks",
// 2017): trials train in intervals of pbt.interval budget units up to budget.max. A trial that
// finished interval k (not its last) is decided once every trial of the population that is still
// training has finished interval k too (and none is yet to start) (a barrier: with fewer worker groups than
// trials, the first trial to finish an interval would otherwise be ranked against nobody, and a decision
// would depend on which group happened to be faster). It is then ranked among interval k's results (best
// first, ties to the lower trial id). In the bottom floor(n * quantile) it exploits: it continues from a copy
// of the checkpoint a trial of the top floor(n * quantile) wrote at the end of interval k, with that trial's
// hyperparameters of interval k, explored: each searched key that may change mid-training is resampled from
// its range with pbt.resample_probability, else multiplied by one of pbt.perturbation's factors (clipped to
// the range; ints rounded; a choice moves to a neighbouring choice). Keys that fix the model, the data plan
// or the trajectory's seed keep the donor's values. Otherwise the trial continues unchanged. Every draw comes
// from a counter-based stream keyed by (sweep seed, trial, interval), so the same results give the same
// decisions, in whatever order they came. Like Asha, this class only decides; the coordinator copies the
// checkpoints and records the lineage (pbt_lineage.hpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "phalanx/config/sweep_config.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/sweep/asha.hpp"
#include "phalanx/sweep/job_records.hpp"
#include "phalanx/sweep/search_space.hpp"

namespace phalanx::sweep {

// The training-config keys an exploit may change in a trial that resumes a checkpoint: the
// optimizer's rates and coefficients and the label smoothing. Every other searched key (model.*,
// train.batch_size, optimizer.type, seed, ...) changes the model's shape, the data plan or the
// trajectory, and a trial that exploits takes the donor's value.
const std::vector<std::string>& pbt_mutable_keys();
bool pbt_mutable(const std::string& key);

// Interval k trains up to min((k + 1) * interval, max_budget).
std::vector<double> pbt_budgets(double interval, double max_budget);

// What happened at one (trial, interval): the hyperparameters it trained with, where its
// checkpoint came from (parent_trial >= 0: it exploited that trial's end of parent_interval), and
// its metric once the interval has finished.
struct PbtStep {
  int trial = 0;
  int interval = 0;
  int parent_trial = -1;
  int parent_interval = -1;
  TrialParameters parameters;
  std::optional<double> metric;
  bool exploited() const { return parent_trial >= 0; }
  friend bool operator==(const PbtStep& a, const PbtStep& b) {
    return a.trial == b.trial && a.interval == b.interval && a.parent_trial == b.parent_trial &&
           a.parent_interval == b.parent_interval && a.parameters.values == b.parameters.values &&
           a.parameters.seed == b.parameters.seed && a.metric == b.metric;
  }
};

class Pbt {
 public:
  explicit Pbt(const config::SweepConfig& sweep);

  int interval_count() const { return static_cast<int>(budgets_.size()); }
  int last_interval() const { return interval_count() - 1; }
  const std::vector<double>& budgets() const { return budgets_; }
  int started_trials() const { return static_cast<int>(trials_.size()); }

  // The jobs to start now, in order of preference: one new trial while fewer than pbt.population
  // are unfinished and trials are left, then trials ready for their next interval, lowest interval
  // first (the population stays together, so each decision sees many results).
  std::vector<Job> candidates() const;
  // Takes a job: a new trial gets the next trial id (returned in the job) and its sampled
  // hyperparameters; a continuation is marked so that it is not offered again.
  Job take(Job job);
  // A trial's job failed: it is never offered again, and no longer holds the others back. Returns
  // the steps that this decides (as record's).
  std::vector<PbtStep> fail(int trial);
  // The metric of `trial` at the end of `interval`. Returns the steps decided now, by interval then
  // trial (the trials waiting at an interval whose results are now all in, this one's included):
  // each the step its trial takes next (interval + 1: its parent and hyperparameters), which the
  // caller records before the trial's next job goes out.
  std::vector<PbtStep> record(int trial, int interval, double metric);

  // The hyperparameters `trial` trains `interval` with (known once the interval is decided).
  const TrialParameters& parameters(int trial, int interval) const {
    return step(trial, interval).parameters;
  }
  // Its step of `interval` (the parent it copied, -1 for none; the metric is not kept here).
  const PbtStep& step(int trial, int interval) const;
  double result(int trial, int interval) const;
  // The results of one interval, best first.
  std::vector<std::pair<int, double>> ranking(int interval) const;

  // --resume: the trials, results and jobs the database recorded, and the steps of the lineage
  // (interval >= 1). Returns the steps a kill left undecided whose interval's results are all in:
  // decided again here, the same as before, for the caller to carry out and record.
  std::vector<PbtStep> restore(const RecordedProgress& progress, const std::vector<PbtStep>& lineage);

 private:
  struct TrialState {
    std::vector<PbtStep> steps;  // per interval decided so far
    int finished = -1;           // the last interval finished
    bool taken = false;          // its next interval is running (or queued again)
    bool failed = false;
  };
  bool better(const std::pair<int, double>& a, const std::pair<int, double>& b) const;
  PbtStep decide(int trial, int interval) const;
  std::vector<PbtStep> decide_ready();
  TrialParameters explore(const TrialParameters& donor, RandomStream& stream) const;
  TrialState& state(int trial);
  const TrialState& state(int trial) const;
  int unfinished() const;

  const config::SweepConfig& sweep_;
  std::vector<double> budgets_;
  std::vector<TrialState> trials_;
  std::vector<std::map<int, double>> results_;  // per interval: trial -> metric
};

}  // namespace phalanx::sweep
