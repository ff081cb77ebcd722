// What population-based training leaves on disk: each trial's checkpoint at the end of each
// interval, kept (a hard link, or a copy where the file system has none) as
// trials/<id>/pbt/interval-<k>.h5 so that a trial exploiting it later copies exactly that point
// even after its owner trained on; the copy into the exploiting trial's checkpoints/; and the
// lineage table of sweep.db:
//   pbt_lineage  one row per (trial, interval): the budget it trains to, the trial and interval
//                whose checkpoint it continued (NULL: its own), the hyperparameters and seed it
//                trained with, its metric once finished, and the kept checkpoint it copied.
// Written only by the coordinator, each step in one transaction after its files are in place.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "phalanx/sweep/database.hpp"
#include "phalanx/sweep/pbt.hpp"

namespace phalanx::sweep {

void create_pbt_lineage(const Database& database);

// The finished step's metric (its row written if it has none: interval 0) and the rows of the
// steps decided (with the kept checkpoint each copied, "" for none), in one transaction; a decided
// trial's row in `trials` then holds its new parameters and resolved config (`configs`), so that
// results.csv and best/ show what it trains with last. `budgets` are the intervals' budgets.
void record_pbt_steps(const Database& database, const std::optional<PbtStep>& finished,
                      const std::vector<PbtStep>& decided, const std::vector<double>& budgets,
                      const std::vector<std::string>& copied, const std::vector<std::string>& configs);

// Every recorded step, by trial and interval (for --resume and the report).
std::vector<PbtStep> read_pbt_lineage(const Database& database);

// trials/<id>/pbt/interval-<k>.h5 of the sweep directory.
std::string kept_checkpoint_path(const std::string& sweep_directory, int trial, int interval);

// Keeps the trial's newest checkpoint as its end of `interval`; once kept it stays (a redo after a
// kill keeps the first). Returns the kept path.
std::string keep_interval_checkpoint(const std::string& sweep_directory, int trial, int interval);

// Exploit: the donor's kept checkpoint of `donor_interval` becomes `trial`'s newest (its
// checkpoints/latest.h5, replaced atomically; its step-*.h5 removed, so that none of them is taken
// as newer). The donor's files stay as they are. Returns the copied path.
std::string copy_donor_checkpoint(const std::string& sweep_directory, int trial, int donor,
                                  int donor_interval);

}  // namespace phalanx::sweep
