// Trial parameters from the search space: random search draws each value from a counter-based
// stream keyed by (sweep seed, trial id, key), grid search enumerates the product of the choices
// in file order. Both are pure functions of the trial id, so a trial's configuration (and its
// training seed) does not depend on which worker runs it, in what order, or after a resume.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "phalanx/config/sweep_config.hpp"

namespace phalanx::sweep {

struct TrialParameters {
  // (training-config key, value as YAML text), in the order of the space.
  std::vector<std::pair<std::string, std::string>> values;
  std::uint64_t seed = 0;  // the trial's training seed
  // KEY=VALUE overrides for config::trial_config, the seed included.
  std::vector<std::string> assignments() const;
  nlohmann::json to_json() const;  // {"key": value, ...} with numbers as numbers
};

// How many trials the sweep runs: `trials` for random search; for grid search the size of the
// grid, or `trials` when that is smaller and not 0.
int trial_count(const config::SweepConfig& sweep);

TrialParameters sample_trial(const config::SweepConfig& sweep, int trial_id);

// The training seed of a trial: derived from the sweep seed and the trial id only.
std::uint64_t trial_seed(const config::SweepConfig& sweep, int trial_id);

}  // namespace phalanx::sweep
