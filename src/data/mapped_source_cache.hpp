// Validated mapped sources shared within a process. One run opens its data.source from several
// places (the statistics, the training split, the evaluation split, the batch split probe, a sweep
// worker's checks), and validating a source reads every label of every split: for a large shared
// file that is seconds each time. The cache keeps the validated source and hands out the same
// object while its files are unchanged (same size and modification time); a changed file or
// another mapping validates afresh.
#pragma once

#include <memory>

#include "phalanx/config/config.hpp"
#include "mapped_source.hpp"

namespace phalanx::data {

// The validated source for `source`: from the cache when neither the mapping nor any of its files
// changed since it was validated, otherwise a new MappedSource (whose input errors propagate and
// are not cached). Thread-safe.
std::shared_ptr<const MappedSource> open_mapped_source(const config::SourceConfig& source);

// How many times open_mapped_source validated a source in this process (for tests and the log).
int mapped_source_validations();

}  // namespace phalanx::data
