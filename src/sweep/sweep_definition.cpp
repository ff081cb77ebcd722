// The sweep's definition as stored in sweep.db and compared on --resume (see coordinator.hpp):
// what is searched and how, never where or on how many ranks, so a resume may run on another
// allocation.
#include <nlohmann/json.hpp>

#include "phalanx/config/config.hpp"
#include "phalanx/sweep/coordinator.hpp"
#include "phalanx/sweep/search_space.hpp"

namespace phalanx::sweep {

std::string sweep_definition(const config::SweepConfig& sweep) {
  nlohmann::json space = nlohmann::json::array();
  for (const auto& parameter : sweep.space)
    space.push_back({{"key", parameter.key},
                     {"type", config::name_of(parameter.type)},
                     {"values", parameter.values},
                     {"low", parameter.low},
                     {"high", parameter.high}});
  nlohmann::json definition = {{"seed", sweep.seed},
                                     {"search", config::name_of(sweep.search)},
                                     {"scheduler", config::name_of(sweep.scheduler)},
                                     {"trials", trial_count(sweep)},
                                     {"metric", sweep.metric},
                                     {"goal", config::name_of(sweep.goal)},
                                     {"budget",
                                      {{"unit", config::name_of(sweep.budget_unit)},
                                       {"min", sweep.min_budget},
                                       {"max", sweep.max_budget},
                                       {"eta", sweep.eta}}},
                                     {"space", space},
                                     {"base", config::to_yaml(sweep.base)}};
  // Only in TPE sweeps, so that the definitions of sweeps recorded before TPE compare unchanged.
  if (sweep.search == config::Search::Tpe)
    definition["tpe"] = {{"startup_trials", sweep.tpe_startup_trials}, {"candidates", sweep.tpe_candidates}};
  // Only where it is not the default, so that the definitions of sweeps recorded before it compare unchanged.
  if (sweep.scheduler == config::Scheduler::Asha && sweep.asha_rule != config::AshaRule::Promotion)
    definition["asha"]["rule"] = config::name_of(sweep.asha_rule);
  if (sweep.scheduler == config::Scheduler::Asha && sweep.asha_brackets != 1)
    definition["asha"]["brackets"] = sweep.asha_brackets;
  if (sweep.scheduler == config::Scheduler::Pbt)
    definition["pbt"] = {{"population", sweep.pbt.population},
                         {"interval", sweep.pbt.interval},
                         {"quantile", sweep.pbt.quantile},
                         {"perturbation", sweep.pbt.perturbation},
                         {"resample_probability", sweep.pbt.resample_probability}};
  return definition.dump(1);
}

std::string sweep_definition_difference(const std::string& mine, const std::string& other,
                                        const std::string& where) {
  nlohmann::json ours, theirs;
  try {
    ours = nlohmann::json::parse(mine);
    theirs = nlohmann::json::parse(other);
  } catch (const nlohmann::json::exception&) {
    return config::first_difference(mine, other, where);
  }
  for (const auto& [key, value] : theirs.items()) {
    if (ours.contains(key) && ours.at(key) == value) continue;
    // The base config is one YAML string in the JSON: compared line by line, or the message would
    // quote both whole configs.
    if (key == "base" && ours.contains(key) && ours.at(key).is_string() && value.is_string())
      return "its base config differs: " +
             config::first_difference(ours.at(key).get<std::string>(), value.get<std::string>(), where);
    return "'" + key + "' is " + (ours.contains(key) ? ours.at(key).dump() : std::string("not set")) +
           " here but " + value.dump() + " " + where;
  }
  for (const auto& [key, value] : ours.items())
    if (!theirs.contains(key)) return "'" + key + "' is " + value.dump() + " here but not set " + where;
  return config::first_difference(mine, other, where);
}

}  // namespace phalanx::sweep
