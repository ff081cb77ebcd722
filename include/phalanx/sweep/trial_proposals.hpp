// Each new trial's parameters, decided when the trial is taken: random and grid search's pure
// functions of the trial id, or TPE (tpe_sampler.hpp) fitted on the rung results ASHA holds at
// that moment, as BOHB feeds its model: the highest rung with at least (parameters + 1) results.
// A proposal draws from a Philox stream keyed by the sweep seed and the trial id, so the same
// results in the same order give the same trials; the database records every proposal (its
// values and the results it was fitted on) and --resume restores them instead of proposing again.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "phalanx/config/sweep_config.hpp"
#include "phalanx/sweep/asha.hpp"
#include "phalanx/sweep/search_space.hpp"
#include "phalanx/sweep/tpe_sampler.hpp"

namespace phalanx::sweep {

enum class ProposalMethod { Random, Grid, Tpe };
std::string name_of(ProposalMethod method);

// How a trial's parameters were decided, as the database records it.
struct Proposal {
  TrialParameters parameters;
  ProposalMethod method = ProposalMethod::Random;
  int model_rung = -1;         // TPE: the rung whose results it was fitted on
  std::vector<int> fitted_on;  // TPE: those results' trials, ascending
  friend bool operator==(const Proposal&, const Proposal&) = default;
};

// The rung whose results a model is fitted on: the highest with at least `needed` results, or -1.
int model_rung(const Asha& asha, int needed);

class TrialProposals {
 public:
  explicit TrialProposals(const config::SweepConfig& sweep);

  // The parameters of the new trial `trial`, from the results `asha` has recorded so far.
  Proposal propose(int trial, const Asha& asha);
  // --resume: a trial's parameters as the database recorded them ((key, YAML text) in space order).
  void restore(int trial, std::vector<std::pair<std::string, std::string>> values);
  // The parameters of a trial proposed or restored (random and grid search: of any trial).
  TrialParameters parameters(int trial) const;

 private:
  const config::SweepConfig& sweep_;
  std::optional<TpeSampler> sampler_;  // TPE search only
  std::map<int, TrialParameters> known_;
};

}  // namespace phalanx::sweep
