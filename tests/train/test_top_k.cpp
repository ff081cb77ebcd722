// Top-k accuracy's ranking (a hand-computed case with ties and a NaN) and which k a run reports:
// top-5 above 5 classes, eval.top_k's besides, a k above the classes refused naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "config/expect_input_error.hpp"
#include "phalanx/train/top_k.hpp"

namespace phalanx::train {
namespace {

// Scores of 6 classes: class 1 and 3 tie at 0.3, class 2 and 5 tie at 0.1.
const std::vector<float> scores = {0.05f, 0.3f, 0.1f, 0.3f, 0.15f, 0.1f};

TEST(TopK, RanksTheLabelWithTiesToTheLowerIndex) {
  // Class 1 is the arg-max (first of the two 0.3s); class 3 comes after it.
  EXPECT_EQ(label_rank(scores.data(), 6, 1), 0);
  EXPECT_EQ(label_rank(scores.data(), 6, 3), 1);
  EXPECT_EQ(label_rank(scores.data(), 6, 4), 2);
  EXPECT_EQ(label_rank(scores.data(), 6, 2), 3);
  EXPECT_EQ(label_rank(scores.data(), 6, 5), 4);
  EXPECT_EQ(label_rank(scores.data(), 6, 0), 5);
  // Correct at k when the rank is below k: with labels 3, 5, 0 top-1 counts none, top-2 one
  // (label 3), top-5 two (labels 3 and 5), top-6 all three.
  const std::vector<int> labels = {3, 5, 0};
  for (const auto& [k, correct] : std::vector<std::pair<int, int>>{{1, 0}, {2, 1}, {5, 2}, {6, 3}}) {
    int counted = 0;
    for (const int label : labels) counted += label_rank(scores.data(), 6, label) < k;
    EXPECT_EQ(counted, correct) << "top-" << k;
  }
}

TEST(TopK, ANaNScoreForTheLabelIsNeverCorrect) {
  std::vector<float> with_nan = scores;
  with_nan[4] = NAN;
  EXPECT_EQ(label_rank(with_nan.data(), 6, 4), 6);
  // Other labels do not count the NaN as scored higher.
  EXPECT_EQ(label_rank(with_nan.data(), 6, 2), 2);
}

TEST(TopK, FiveAboveFiveClassesAndTheListedOnes) {
  EXPECT_EQ(reported_top_k({}, 10, "d.h5"), (std::vector<int>{5}));
  EXPECT_EQ(reported_top_k({}, 5, "d.h5"), (std::vector<int>{}));
  EXPECT_EQ(reported_top_k({3, 5}, 10, "d.h5"), (std::vector<int>{3, 5}));
  EXPECT_EQ(reported_top_k({10, 2}, 10, "d.h5"), (std::vector<int>{2, 5, 10}));
  EXPECT_EQ(reported_top_k({2}, 3, "d.h5"), (std::vector<int>{2}));
  EXPECT_EQ(top_k_accuracy_name(5), "top5_accuracy");
}

TEST(TopK, AKAboveTheClassesIsNamed) {
  phalanx::testing::expect_input_error([] { reported_top_k({11}, 10, "data/fashion.h5"); },
                                       {"eval.top_k", "11", "10 classes", "data/fashion.h5"});
}

}  // namespace
}  // namespace phalanx::train
