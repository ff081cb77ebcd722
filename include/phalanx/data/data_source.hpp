// The dataset a training config names, whichever way it names it: a phalanx dataset file
// (data.path) or a user's own HDF5 files read in place (data.source). Code that trains, evaluates
// or sizes batches asks here, so it never needs to know which of the two it has.
#pragma once

#include <memory>
#include <string>

#include "phalanx/comm/mpi_io.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/split_range_reader.hpp"

namespace phalanx::data {

// Classes and every split's count and sample shape, validated. For a native file also its mean
// and std; a mapped source's statistics come from source_statistics (they need a pass over the
// training images).
DatasetInfo read_source_info(const config::DataConfig& data);

// One split held open for ranged reads. `mpi_io` (parallel HDF5) applies to native files; mapped
// sources are read with HDF5's POSIX driver, every rank on its own.
std::unique_ptr<SplitRangeReader> open_split_reader(const config::DataConfig& data,
                                                    const std::string& split_name,
                                                    const comm::MpiIoAccess* mpi_io = nullptr);

// A whole split in memory.
Split read_whole_split(const config::DataConfig& data, const std::string& split_name);

// How messages name the dataset: data.path, or the train images of data.source.
std::string source_name(const config::DataConfig& data);

}  // namespace phalanx::data
