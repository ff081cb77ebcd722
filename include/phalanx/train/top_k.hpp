// Top-k accuracy: a sample counts as correct at k when its label is among the k classes the model
// scores highest. Which k a run reports (eval.top_k, and top-5 whenever there are more than 5
// classes) and what each is called in metrics.jsonl, summary.json and a sweep's metric.
#pragma once

#include <string>
#include <vector>

namespace phalanx::train {

// The label's place among the classes, 0 for the best: the classes scored higher, and those
// scored equally with a lower index (as arg-max takes the first of equal scores), so with ties
// the label is in the top k when fewer than k classes come before it. A NaN score for the label
// puts it last.
int label_rank(const float* scores, int classes, int label);

// The k values a run reports, ascending: `requested` (eval.top_k) and 5 when `classes` > 5.
// Throws InvalidInput naming eval.top_k for a k above the class count, as `source` names the data.
std::vector<int> reported_top_k(const std::vector<int>& requested, int classes, const std::string& source);

// "top5_accuracy": what follows "test_" in an event's or the summary's key.
std::string top_k_accuracy_name(int k);

}  // namespace phalanx::train
