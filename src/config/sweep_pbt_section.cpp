// Reading and checking the `pbt:` section of a sweep file (see sweep_pbt_section.hpp).
#include "sweep_pbt_section.hpp"

namespace phalanx::config {
namespace {

[[noreturn]] void fail_at(const Reader& reader, const std::string& key, const std::string& message,
                          const YAML::Node& node) {
  reader.fail(key, key + ": " + message, node);
}

}  // namespace

const std::vector<std::string>& pbt_keys() {
  static const std::vector<std::string> keys = {"population", "interval", "quantile", "perturbation",
                                                "resample_probability"};
  return keys;
}

void read_pbt_section(const Reader& reader, const YAML::Node& root, SweepConfig& sweep) {
  const YAML::Node section = root["pbt"];
  if (sweep.scheduler != Scheduler::Pbt) {
    if (section.IsDefined())
      fail_at(reader, "pbt",
              "is only read with scheduler: pbt (this sweep's scheduler is " + name_of(sweep.scheduler) + ")",
              section);
    return;
  }
  if (!reader.require_mapping(section, "pbt"))
    fail_at(reader, "pbt",
            "is missing: scheduler: pbt needs at least pbt.interval (in budget." +
                name_of(sweep.budget_unit) + ")",
            section.IsDefined() ? section : root);
  reader.check_keys(section, "pbt", pbt_keys());
  PbtConfig& pbt = sweep.pbt;
  if (!section["interval"].IsDefined())
    fail_at(reader, "pbt.interval", "is missing: give the budget trained between exploit/explore decisions",
            section);
  pbt.interval = reader.real(section["interval"], "pbt.interval", Bound{0.0, false}, std::nullopt);
  if (pbt.interval > sweep.max_budget)
    fail_at(reader, "pbt.interval",
            format_number(pbt.interval) + " is larger than budget.max (" + format_number(sweep.max_budget) +
                "): the population would never exploit",
            section["interval"]);
  if (sweep.search != Search::Random)
    fail_at(
        reader, "search",
        "scheduler: pbt draws its population at random (search: random, not " + name_of(sweep.search) + ")",
        root["search"]);
  pbt.population = sweep.trials;
  if (section["population"].IsDefined())
    pbt.population = static_cast<int>(reader.integer(section["population"], "pbt.population", 2, 100000));
  if (pbt.population < 2)
    fail_at(reader, "pbt.population",
            "is " + std::to_string(pbt.population) + " (from trials): a population needs at least 2 trials",
            section["population"].IsDefined() ? section["population"] : section);
  if (pbt.population > sweep.trials)
    fail_at(reader, "pbt.population",
            std::to_string(pbt.population) + " is larger than trials (" + std::to_string(sweep.trials) + ")",
            section["population"]);
  if (section["quantile"].IsDefined())
    pbt.quantile = reader.real(section["quantile"], "pbt.quantile", Bound{0.0, false}, Bound{0.5, true});
  if (section["resample_probability"].IsDefined())
    pbt.resample_probability = reader.real(section["resample_probability"], "pbt.resample_probability",
                                           Bound{0.0, true}, Bound{1.0, true});
  if (const YAML::Node factors = section["perturbation"]; factors.IsDefined()) {
    if (!factors.IsSequence() || factors.size() == 0)
      fail_at(reader, "pbt.perturbation", "expected a non-empty list of factors, e.g. [0.8, 1.2]", factors);
    pbt.perturbation.clear();
    for (std::size_t index = 0; index < factors.size(); ++index)
      pbt.perturbation.push_back(reader.real(factors[index],
                                             "pbt.perturbation[" + std::to_string(index) + "]",
                                             Bound{0.0, false}, std::nullopt));
  }
}

}  // namespace phalanx::config
