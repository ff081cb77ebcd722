// Promotion-based ASHA (Li et al., "A System for Massively Parallel Hyperparameter Tuning",
// MLSys 2020). Rung k trains a trial to budget r * eta^k (r = budget.min) while that stays within
// budget.max; when r * eta^K falls short of budget.max, one more rung trains to budget.max.
// Whenever a worker is free, a trial is promoted from the highest rung where it is in the top
// 1/eta (floor(n / eta) of the n results that rung has recorded) and not promoted yet; otherwise
// a new trial starts at rung 0, until the sweep's trial count is reached. Ties in the metric go
// to the lower trial id, so the order is fully determined by the recorded results.
// With AshaRule::Stopping (the form Optuna's SuccessiveHalvingPruner and Ray Tune's ASHA run), a
// trial's fate at a rung is decided once, when its result there is recorded: it goes on if it is
// in the top max(1, floor(n / eta)) of the n results the rung holds then, itself included, and
// stops otherwise. Later results never take that back: in a search that improves as it goes more
// trials reach the top rung than under promotion (in one that gets worse, fewer). The decisions
// depend on the order of the results, which --resume replays as recorded.
// With brackets B > 1 (asynchronous Hyperband, Li et al. 2020 section 3.3; Ray Tune's ASHA
// `brackets`), trials are dealt to B brackets: bracket b starts its trials at rung b and promotes
// (or stops) them among its own trials only, so bracket 0 is the ASHA above and higher brackets
// stop less early, hedging against a low rung that does not predict the top one. Trial ids are
// dealt in Hyperband's proportions (bracket b, s = top_rung - b, gets ceil((top + 1) / (s + 1) *
// eta^s) shares), each id to the bracket furthest behind its share, so the bracket is a function
// of the id and --resume needs nothing new.
// This class only decides; it holds no I/O, so it is rebuilt from the database on --resume.
#pragma once

#include <map>
#include <set>
#include <vector>

#include "phalanx/config/sweep_config.hpp"

namespace phalanx::sweep {

// A unit of work: train `trial` up to rung `rung`. A new trial has trial == -1 until it is taken.
struct Job {
  int trial = -1;
  int rung = 0;
  bool new_trial() const { return trial < 0; }
  friend bool operator==(const Job&, const Job&) = default;
};

class Asha {
 public:
  // `maximize` says which way the metric is better; `single_rung` gives one rung at max_budget
  // (every trial trained fully: the `full` scheduler, plain random or grid search).
  Asha(double min_budget, double max_budget, int eta, bool maximize, int max_trials, bool single_rung = false,
       config::AshaRule rule = config::AshaRule::Promotion, int brackets = 1);
  // Rungs at the given (increasing) budgets, for a scheduler that keeps ASHA's book of rung
  // results but takes its own decisions (pbt.hpp's intervals).
  Asha(std::vector<double> budgets, bool maximize, int max_trials);

  int rung_count() const { return static_cast<int>(budgets_.size()); }
  int top_rung() const { return rung_count() - 1; }
  double budget(int rung) const { return budgets_.at(static_cast<std::size_t>(rung)); }
  int eta() const { return eta_; }
  int started_trials() const { return started_; }
  int max_trials() const { return max_trials_; }
  int brackets() const { return brackets_; }
  // The rung `trial` starts at: its bracket (0 with one bracket).
  int first_rung(int trial) const;
  // Whether `job` trains its trial from the start: a new trial, or a trial's first rung.
  bool starts_trial(const Job& job) const { return job.new_trial() || job.rung <= first_rung(job.trial); }

  // The jobs ASHA would start now, in its order of preference: promotions from the highest rung
  // first (best metric first within a rung), then one new trial if any are left. The scheduler
  // around it may pass over a promotion (heterogeneous dispatch) but never reorders the list.
  std::vector<Job> candidates() const;
  // Takes a job: a new trial gets the next trial id (returned in the job), a promotion is marked
  // so that it is not offered again.
  Job take(Job job);
  // The metric of `trial` at the end of `rung` (under AshaRule::Stopping also the decision whether
  // it goes on, so results must be recorded in the order they came).
  void record(int trial, int rung, double metric);
  // For rebuilding from the database: a trial that exists (ids 0..n-1 are then started), and
  // one that was promoted to `rung` (whether or not that rung finished).
  void restore_started(int trial);
  void restore_promoted(int trial, int to_rung);

  // The recorded results of one rung, best first (every bracket's).
  std::vector<std::pair<int, double>> ranking(int rung) const;
  bool promoted(int trial, int from_rung) const;
  // Whether `trial` is on its way past `from_rung`: promoted, or (AshaRule::Stopping) decided to go
  // on and not yet taken. A trial with a result there for which this is false has stopped there,
  // for now (promotion) or for good (stopping).
  bool goes_on(int trial, int from_rung) const;

 private:
  bool better(const std::pair<int, double>& a, const std::pair<int, double>& b) const;
  // The results of one rung from the trials of one bracket, best first: what promotes among them.
  std::vector<std::pair<int, double>> ranking(int rung, int bracket) const;

  std::vector<double> budgets_;
  int eta_;
  bool maximize_;
  config::AshaRule rule_ = config::AshaRule::Promotion;
  int max_trials_;
  int brackets_ = 1;
  std::vector<int> first_rungs_;  // per trial id: its bracket
  int started_ = 0;
  std::vector<std::map<int, double>> results_;  // per rung: trial -> metric
  std::vector<std::set<int>> promoted_;         // per rung: trials promoted out of it
  std::vector<std::set<int>> going_on_;         // per rung (stopping): trials decided to go on
};

}  // namespace phalanx::sweep
