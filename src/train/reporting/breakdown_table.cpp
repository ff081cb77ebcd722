// Text rendering of the per-rank breakdown (see breakdown_table.hpp).
#include "reporting/breakdown_table.hpp"

#include <cstdio>

namespace phalanx::train {

std::string breakdown_table(const std::vector<nlohmann::json>& breakdowns) {
  static const char* const stages[] = {"data_wait",      "host_to_device", "forward",   "backward",
                                       "allreduce_wait", "optimizer",      "sync_wait", "other"};
  std::string table =
      "  rank    step ms   data    h2d    forward  backward  allreduce (exposed/total)  optimizer   sync  "
      "other";
  for (std::size_t rank = 0; rank < breakdowns.size(); ++rank) {
    const auto& breakdown = breakdowns[rank];
    const auto milliseconds = [&](const char* stage) {
      return breakdown.contains(stage) ? breakdown[stage].value("ms_per_step", 0.0) : 0.0;
    };
    char row[256];
    std::snprintf(row, sizeof(row),
                  "\n  %4zu  %9.2f %6.2f %6.2f %9.2f %9.2f  %9.2f / %-9.2f       %9.2f %6.2f %6.2f", rank,
                  breakdown.value("step_ms", 0.0), milliseconds(stages[0]), milliseconds(stages[1]),
                  milliseconds(stages[2]), milliseconds(stages[3]), milliseconds(stages[4]),
                  milliseconds("allreduce_total"), milliseconds(stages[5]), milliseconds(stages[6]),
                  milliseconds(stages[7]));
    table += row;
  }
  return table;
}

}  // namespace phalanx::train
