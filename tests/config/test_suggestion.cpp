// Tests of config::closest_match, the "did you mean" of every unknown key and value.
#include <gtest/gtest.h>

#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

TEST(ConfigSuggestion, FindsTheClosestCandidate) {
  const std::vector<std::string> keys = {"epochs", "max_steps", "batch_size", "label_smoothing"};
  EXPECT_EQ(closest_match("batchsize", keys), "batch_size");
  EXPECT_EQ(closest_match("epoch", keys), "epochs");
  EXPECT_EQ(closest_match("maxsteps", keys), "max_steps");
  EXPECT_EQ(closest_match("epochs", keys), "epochs");
}

TEST(ConfigSuggestion, NothingWhenTooFar) {
  const std::vector<std::string> keys = {"epochs", "max_steps", "batch_size"};
  EXPECT_EQ(closest_match("learning_rate", keys), "");
  EXPECT_EQ(closest_match("xyz", keys), "");
  EXPECT_EQ(closest_match("anything", {}), "");
}

TEST(ConfigSuggestion, ToleranceGrowsWithTheWord) {
  // Two edits are always allowed; a 12-letter word allows four.
  EXPECT_EQ(closest_match("sg", {"sgd"}), "sgd");
  EXPECT_EQ(closest_match("ab", {"abcd"}), "abcd");
  EXPECT_EQ(closest_match("ab", {"abcde"}), "");
  EXPECT_EQ(closest_match("weightdecay_", {"weight_decay"}), "weight_decay");
  EXPECT_EQ(closest_match("abcdefghijkl", {"abcdefghWXYZ"}), "abcdefghWXYZ");
  EXPECT_EQ(closest_match("abcdefghijkl", {"abcdefgVWXYZ"}), "");
}

TEST(ConfigSuggestion, TiesGoToTheFirstCandidate) {
  EXPECT_EQ(closest_match("cat", {"bat", "hat"}), "bat");
}

}  // namespace
}  // namespace phalanx::config
