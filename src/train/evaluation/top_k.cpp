// Top-k accuracy's rank and the k a run reports (top_k.hpp). Ranking counts classes instead of
// sorting: evaluation asks it of every sample, and k is small beside the class count.
#include "phalanx/train/top_k.hpp"

#include <algorithm>
#include <cmath>

#include "phalanx/core/error.hpp"

namespace phalanx::train {

int label_rank(const float* scores, int classes, int label) {
  const float own = scores[label];
  if (std::isnan(own)) return classes;
  int before = 0;
  for (int index = 0; index < classes; ++index)
    before += scores[index] > own || (index < label && scores[index] == own);
  return before;
}

std::vector<int> reported_top_k(const std::vector<int>& requested, int classes, const std::string& source) {
  std::vector<int> top_k;
  for (const int k : requested) {
    PHALANX_REQUIRE_INPUT(k >= 1 && k <= classes, "eval.top_k: ", k, " is not between 1 and the ", classes,
                          " classes of ", source);
    top_k.push_back(k);
  }
  if (classes > 5) top_k.push_back(5);
  std::sort(top_k.begin(), top_k.end());
  top_k.erase(std::unique(top_k.begin(), top_k.end()), top_k.end());
  return top_k;
}

std::string top_k_accuracy_name(int k) {
  return "top" + std::to_string(k) + "_accuracy";
}

}  // namespace phalanx::train
