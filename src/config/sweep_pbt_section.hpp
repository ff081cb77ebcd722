// The `pbt:` section of a sweep file (scheduler: pbt), read apart from the rest of the sweep file
// so that population-based training's keys and checks stay in one place.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "phalanx/config/sweep_config.hpp"
#include "reader.hpp"

namespace phalanx::config {

// The keys of the section, for check_keys and for --set pbt.KEY=VALUE.
const std::vector<std::string>& pbt_keys();

// Reads root["pbt"] into sweep.pbt once the scheduler, trials and budget are known; every bad value
// fails naming its key (pbt.quantile outside (0, 0.5], pbt.interval <= 0 or > budget.max, ...). A
// `pbt:` section with another scheduler is refused: it would do nothing.
void read_pbt_section(const Reader& reader, const YAML::Node& root, SweepConfig& sweep);

}  // namespace phalanx::config
