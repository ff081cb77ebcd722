// Trial parameters from the search space: random search draws each value from a counter-based
// stream keyed by (sweep seed, trial id, key), grid search enumerates the product of the choices
// in file order. Both are pure functions of the trial id, so a trial's configuration (and its
// training seed) does not depend on which worker runs it, in what order, or after a resume.
// TPE's trials depend on the results before them too (trial_proposals.hpp); they are written in
// the same form, through the estimator's coordinates below.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "phalanx/config/sweep_config.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/sweep/tpe_sampler.hpp"

namespace phalanx::sweep {

struct TrialParameters {
  // (training-config key, value as YAML text), in the order of the space.
  std::vector<std::pair<std::string, std::string>> values;
  std::uint64_t seed = 0;  // the trial's training seed
  // KEY=VALUE overrides for config::trial_config, the seed included.
  std::vector<std::string> assignments() const;
  nlohmann::json to_json() const;  // {"key": value, ...} with numbers as numbers
  friend bool operator==(const TrialParameters&, const TrialParameters&) = default;
};

// How many trials the sweep runs: `trials` for random and TPE search; for grid search the size of the
// grid, or `trials` when that is smaller and not 0.
int trial_count(const config::SweepConfig& sweep);

// Random search's or grid search's trial (TPE's startup trials are random search's).
TrialParameters sample_trial(const config::SweepConfig& sweep, int trial_id);

// A trial's values in the estimator's coordinates (tpe_sampler.hpp); an error for a value that is
// not in the space (a choice not listed, a number out of range).
SpacePoint point_of(const config::SweepConfig& sweep, const TrialParameters& trial);
// The trial at `point`, its values written as random search writes them (within bounds).
TrialParameters trial_at(const config::SweepConfig& sweep, int trial_id, const SpacePoint& point);

// The training seed of a trial: derived from the sweep seed and the trial id only.
std::uint64_t trial_seed(const config::SweepConfig& sweep, int trial_id);

// One value of `parameter` as random search draws it (a choice, an int, uniform or log-uniform),
// as YAML text; PBT's resampling draws the same way from its own stream.
std::string draw_value(const config::SearchParameter& parameter, RandomStream& stream);

// A real value as trials write it: nine significant digits, exact enough for any hyperparameter
// and readable in the tables.
std::string format_real(double value);

}  // namespace phalanx::sweep
