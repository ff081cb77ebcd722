// "Did you mean" suggestions for unknown keys and values: the candidate with the smallest
// Levenshtein distance, offered only when it is close enough to be a plausible typo.
#include <algorithm>
#include <numeric>

#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

// Edits (insert, delete, substitute) turning `from` into `to`, with one row of the table.
std::size_t levenshtein_distance(const std::string& from, const std::string& to) {
  std::vector<std::size_t> row(to.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= from.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= to.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitution = diagonal + (from[i - 1] == to[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[to.size()];
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  // Longer words tolerate more typos; two edits are always allowed ("lr" is not close to much).
  const std::size_t tolerance = std::max<std::size_t>(2, word.size() / 3);
  std::string best;
  std::size_t best_distance = tolerance + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = levenshtein_distance(word, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace phalanx::config
