// The sweep's definition as stored in sweep.db and compared on --resume (see coordinator.hpp):
// what is searched and how, never where or on how many ranks, so a resume may run on another
// allocation.
#include <nlohmann/json.hpp>

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

}  // namespace phalanx::sweep
