// The per-rank time breakdown as a small text table, printed by rank 0 at the end of each epoch:
// one row per rank, milliseconds per step for each stage, so a slow stage or a slow rank stands
// out in a Slurm log without opening any file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace phalanx::train {

// `breakdowns[r]` is rank r's StageTimes::to_json (an epoch's or the run's).
std::string breakdown_table(const std::vector<nlohmann::json>& breakdowns);

}  // namespace phalanx::train
