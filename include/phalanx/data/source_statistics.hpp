// The training images' per-channel mean and std for a mapped source (data.source). A phalanx file
// stores them (docs/DESIGN.md §4); a user's shared file is often read-only and has none, so they are
// computed once over the training images, read as the pipeline reads them, and kept in a small
// sidecar file: data.source.statistics, or `source_statistics.txt` in the run directory (so a
// resumed run reuses them). A sidecar whose fingerprint (files, sizes, times, mapping) differs is
// recomputed.
#pragma once

#include <string>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/data/dataset.hpp"

namespace phalanx::data {

inline constexpr const char* statistics_sidecar_name = "source_statistics.txt";

// read_source_info plus the mean and std of the training split (writes only a data.source.statistics
// file; the run directory's sidecar is written by write_statistics_sidecar); collective over `communicator`
// (for a mapped source without a valid sidecar, every rank histograms its share of the training
// images and the counts are summed, so the result is exact and the same on every rank). For a
// native file this is read_dataset_info(data.path) on every rank.
DatasetInfo describe_dataset(const config::DataConfig& data, const std::string& run_directory,
                             const comm::Communicator& communicator);

// Rank 0, once the run directory exists: keeps a mapped source's statistics in the run
// directory's sidecar (unless data.source.statistics names the file, written by describe_dataset)
// when it does not hold them already. Failing to write is not an error: the sidecar is a cache.
void write_statistics_sidecar(const config::DataConfig& data, const std::string& run_directory,
                              const DatasetInfo& info);

// Where the sidecar of a run is: data.source.statistics, or the run directory's file.
std::string statistics_sidecar_path(const config::DataConfig& data, const std::string& run_directory);

}  // namespace phalanx::data
