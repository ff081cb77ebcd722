// Carving val and test splits out of a training split whose files have none (data.source
// val_fraction, test_fraction): seeded and stratified, so every class keeps its share in each
// part even when the file is sorted by class, and the same seed gives the same parts on every
// machine and rank.
#pragma once

#include <cstdint>
#include <vector>

namespace phalanx::data {

struct CarvedRows {
  std::vector<std::int64_t> train, val, test;  // rows of the original split, each ascending
};

// Per class: round(fraction x the class's count) of its rows, drawn by a permutation of that
// class's rows from `seed`, go to test, the next round(val_fraction x count) to val, the rest
// stay in train. Rows stay in file order within each part, so reads remain sequential.
CarvedRows carve_stratified(const std::vector<std::int32_t>& labels, double val_fraction,
                            double test_fraction, std::uint64_t seed);

}  // namespace phalanx::data
