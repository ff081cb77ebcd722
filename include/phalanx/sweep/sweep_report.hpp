// The sweep's HTML report: one self-contained page (inline SVG, no scripts or external files)
// with the optimisation history, a parallel-coordinates plot of the hyperparameters, the rung
// ladder, and a per-worker timeline of busy and idle time. Built from DIR/sweep.db alone.
#pragma once

#include <string>

namespace phalanx::sweep {

// True when `directory` holds a sweep (sweep.db), for `phalanx report DIR` to dispatch on.
bool is_sweep_directory(const std::string& directory);

// Writes DIR/report.html atomically and returns its path.
std::string write_sweep_report(const std::string& directory);

}  // namespace phalanx::sweep
