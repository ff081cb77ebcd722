// What a sweep leaves besides its database: results.csv (one row per trial), best/ (the best
// trial's config.yaml, checkpoint.h5 and trial.json) and report.html (sweep_report.hpp). All are
// derived from sweep.db alone, so they can be rebuilt at any time.
#pragma once

#include <string>

#include "phalanx/sweep/database.hpp"

namespace phalanx::sweep {

// The trial with the best final metric (the highest rung first, then the metric), or -1.
int best_trial(const Database& database, bool maximize);

void write_results_csv(const Database& database, const std::string& path);
// Copies the best trial's resolved config and newest checkpoint into `folder` (atomically).
void write_best(const Database& database, const std::string& sweep_directory, bool maximize);

}  // namespace phalanx::sweep
