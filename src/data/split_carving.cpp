// Stratified, seeded carving. The permutation is our own Fisher-Yates over std::mt19937_64 (whose
// output the standard fixes) rather than std::shuffle, whose algorithm differs between standard
// libraries: the carved test set must not depend on the compiler.
#include "split_carving.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace phalanx::data {

CarvedRows carve_stratified(const std::vector<std::int32_t>& labels, double val_fraction,
                            double test_fraction, std::uint64_t seed) {
  std::map<std::int32_t, std::vector<std::int64_t>> rows_by_class;
  for (std::size_t row = 0; row < labels.size(); ++row)
    rows_by_class[labels[row]].push_back(static_cast<std::int64_t>(row));
  CarvedRows carved;
  for (auto& [label, rows] : rows_by_class) {
    // One stream per class, so a class's draw does not depend on which other classes exist.
    std::mt19937_64 engine(seed ^ (0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(label) + 1)));
    for (std::size_t index = rows.size(); index > 1; --index) {
      const auto pick = static_cast<std::size_t>(engine() % index);
      std::swap(rows[index - 1], rows[pick]);
    }
    const auto count = static_cast<double>(rows.size());
    const auto test_count = static_cast<std::size_t>(std::llround(test_fraction * count));
    const auto val_count =
        std::min(rows.size() - test_count, static_cast<std::size_t>(std::llround(val_fraction * count)));
    carved.test.insert(carved.test.end(), rows.begin(),
                       rows.begin() + static_cast<std::ptrdiff_t>(test_count));
    carved.val.insert(carved.val.end(), rows.begin() + static_cast<std::ptrdiff_t>(test_count),
                      rows.begin() + static_cast<std::ptrdiff_t>(test_count + val_count));
    carved.train.insert(carved.train.end(),
                        rows.begin() + static_cast<std::ptrdiff_t>(test_count + val_count), rows.end());
  }
  for (auto* part : {&carved.train, &carved.val, &carved.test}) std::sort(part->begin(), part->end());
  return carved;
}

}  // namespace phalanx::data
