// The parameters of each new trial (see trial_proposals.hpp): random or grid search, or TPE fitted
// on the highest rung with enough results.
#include "phalanx/sweep/trial_proposals.hpp"

#include <algorithm>
#include <set>

#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::sweep {

std::string name_of(ProposalMethod method) {
  switch (method) {
    case ProposalMethod::Grid: return "grid";
    case ProposalMethod::Tpe: return "tpe";
    default: return "random";
  }
}

int model_rung(const Asha& asha, int needed) {
  for (int rung = asha.top_rung(); rung >= 0; --rung)
    if (static_cast<int>(asha.ranking(rung).size()) >= needed) return rung;
  return -1;
}

TrialProposals::TrialProposals(const config::SweepConfig& sweep) : sweep_(sweep) {
  if (sweep.search == config::Search::Tpe)
    sampler_.emplace(sweep.space, sweep.goal == config::Goal::Maximize,
                     TpeOptions{sweep.tpe_candidates, 1.0});
}

Proposal TrialProposals::propose(int trial, const Asha& asha) {
  Proposal proposal;
  proposal.method = sweep_.search == config::Search::Grid ? ProposalMethod::Grid : ProposalMethod::Random;
  // BOHB's min_points_in_model: a model of d parameters wants d + 1 results of one budget.
  const int rung = sampler_ && trial >= sweep_.tpe_startup_trials
                       ? model_rung(asha, static_cast<int>(sweep_.space.size()) + 1)
                       : -1;
  if (rung < 0) {
    proposal.parameters = sample_trial(sweep_, trial);
  } else {
    std::vector<TpeObservation> observations;
    std::set<int> seen;
    const auto observe = [&](int observed, double metric, int at) {
      const auto known = known_.find(observed);
      PHALANX_CHECK(known != known_.end(), "trial ", observed, " has a result but no recorded parameters");
      observations.push_back({observed, point_of(sweep_, known->second), metric, at});
      proposal.fitted_on.push_back(observed);
      seen.insert(observed);
    };
    for (const auto& [observed, metric] : asha.ranking(rung)) observe(observed, metric, rung);
    // Below the model's rung, the trials that stopped there: ASHA passed them over, so they join
    // the fit ranked under every result of the model's rung. Without them the model knows nothing
    // of the regions where rung 0 already failed, and its l(x) / g(x) favours exactly those. A trial
    // promoted out of its highest rung (or, under ASHA's stopping rule, decided to go on) is on its
    // way up, not known to be worse, and is left out.
    for (int lower = rung - 1; lower >= 0; --lower)
      for (const auto& [observed, metric] : asha.ranking(lower))
        if (!seen.count(observed) && !asha.goes_on(observed, lower)) observe(observed, metric, lower);
    std::sort(proposal.fitted_on.begin(), proposal.fitted_on.end());
    // A stream of its own per trial (not random search's per-key streams), so that the proposal
    // depends only on the seed, the trial id and the observations.
    RandomStream stream(mix_seed(mix_seed(sweep_.seed, fnv1a_hash("tpe")), static_cast<std::uint64_t>(trial)),
                        fnv1a_hash("tpe proposal"));
    proposal.parameters = trial_at(sweep_, trial, sampler_->propose(observations, stream));
    proposal.method = ProposalMethod::Tpe;
    proposal.model_rung = rung;
  }
  known_[trial] = proposal.parameters;
  return proposal;
}

void TrialProposals::restore(int trial, std::vector<std::pair<std::string, std::string>> values) {
  TrialParameters parameters;
  parameters.values = std::move(values);
  parameters.seed = trial_seed(sweep_, trial);
  point_of(sweep_, parameters);  // throws when the recorded values do not fit the space
  known_[trial] = std::move(parameters);
}

TrialParameters TrialProposals::parameters(int trial) const {
  const auto known = known_.find(trial);
  if (known != known_.end()) return known->second;
  PHALANX_CHECK(!sampler_, "trial ", trial, " has no recorded parameters");
  return sample_trial(sweep_, trial);
}

}  // namespace phalanx::sweep
