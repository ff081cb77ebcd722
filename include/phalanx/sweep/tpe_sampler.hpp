// The tree-structured Parzen estimator (Bergstra et al., NeurIPS 2011) as Optuna's multivariate
// TPESampler builds it: the observations split at gamma(n) = min(ceil(n / 10), 25) into the good
// and the rest, one Parzen mixture over the whole space for each (every observation a joint
// kernel, plus a prior kernel), and the candidate drawn from the good mixture with the largest
// log l(x) - log g(x). Pure: the same observations and random stream give the same proposal.
#pragma once

#include <vector>

#include "phalanx/config/sweep_config.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::sweep {

// A point of the search space in the estimator's coordinates, one per parameter in space order:
// uniform: the value; loguniform: its natural log; int: the integer; choice: the value's index.
using SpacePoint = std::vector<double>;

// A trial the estimator learns from: where it was and how it did.
struct TpeObservation {
  int trial = 0;  // older trials weigh less once there are more than 25 (Optuna's default weights)
  SpacePoint point;
  double metric = 0;
  // The rung the metric is from. A trial that reached a higher rung ranks above every trial that
  // stopped lower, whatever the metrics (they are of other budgets): a trial ASHA did not promote
  // is known to be worse, as Optuna's TPE ranks a pruned trial below the completed ones.
  int rung = 0;
};

struct TpeOptions {
  int candidates = 24;        // drawn from l(x) per proposal (Optuna's n_ei_candidates)
  double prior_weight = 1.0;  // of the prior kernel, against 1 for each observation
};

class TpeSampler {
 public:
  // `maximize` says which way the metric is better.
  TpeSampler(std::vector<config::SearchParameter> space, bool maximize, TpeOptions options = {});

  // The next point to try, given at least one observation; draws from `stream` only.
  SpacePoint propose(const std::vector<TpeObservation>& observations, RandomStream& stream) const;

  // How many of `count` observations count as good: gamma(n) = min(ceil(n / 10), 25), at least 1.
  static int good_count(int count);
  // log l(x) - log g(x) of `point` under the estimators fitted on `observations`: what propose()
  // maximises over its candidates.
  double score(const std::vector<TpeObservation>& observations, const SpacePoint& point) const;

 private:
  class Mixture;
  void split(const std::vector<TpeObservation>& observations, std::vector<const TpeObservation*>& good,
             std::vector<const TpeObservation*>& bad) const;

  std::vector<config::SearchParameter> space_;
  bool maximize_;
  TpeOptions options_;
};

// A uniform double in [0, 1) with 53 random bits (next_uniform() is a float: 2^24 values).
double uniform_double(RandomStream& stream);

}  // namespace phalanx::sweep
