// The report of one training run (report.html; `phalanx report RUN_DIR`): loss and accuracy
// curves, throughput over time, the per-rank stacked time breakdown and step-time percentiles,
// GPU metrics when the run had GPUs, and the run's config and summary, as one self-contained page
// built only from the files of the run directory (docs/DESIGN.md §4), so it can be rebuilt at any time.
#pragma once

#include <string>

namespace phalanx::report {

// Reads RUN_DIR/metrics.jsonl (required), summary.json and config.yaml (optional: a run that
// was stopped has neither a summary nor, perhaps, all events). A missing folder or metrics file,
// or a malformed line, is an InvalidInput error naming the file (and line).
std::string render_run_report(const std::string& run_directory);

// render_run_report written to RUN_DIR/report.html atomically; returns the path.
std::string write_run_report(const std::string& run_directory);

}  // namespace phalanx::report
