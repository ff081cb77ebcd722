// `phalanx data inspect` on any HDF5 file: its tree (groups; datasets with shape, dtype, chunks and
// compression) and, where the datasets look like images and labels, a data.source block to paste
// into a training config (docs/DATA.md). Reads only metadata, so it answers at once on terabytes.
#pragma once

#include <string>
#include <vector>

namespace phalanx::data {

// Every group and dataset of the file, one per line, in name order.
std::string describe_hdf5_tree(const std::string& path);

// A data.source block for the files' image and label datasets, paired by sample count and named
// splits (train/test/val in the datasets' names, else in the files' names: images and labels may
// be in separate files); empty when the files have no recognisable pair.
std::string suggest_source_block(const std::vector<std::string>& paths);

// True when `path` is a phalanx dataset (root attribute format = "phalanx-dataset"); an input error
// when the file cannot be opened or its format attribute cannot be read (a damaged file).
bool is_phalanx_dataset(const std::string& path);

}  // namespace phalanx::data
