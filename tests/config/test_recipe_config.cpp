// train.clip_grad_norm and eval.top_k: absent by default, parsed, written into the resolved YAML
// and read back, set and removed with --set; a norm <= 0 and a k < 1 are refused naming the key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/recipe.yaml";
const std::string base = "model: {preset: lenet5}\ndata: {path: d.h5}\n";

TEST(RecipeConfig, ClipGradNormIsOffByDefaultAndRoundTrips) {
  const Config plain = parse(base, source);
  EXPECT_FALSE(plain.train.clip_grad_norm.has_value());
  EXPECT_EQ(parse(to_yaml(plain), "round trip"), plain);

  const Config clipped = parse(base + "train: {clip_grad_norm: 0.5}\n", source);
  ASSERT_TRUE(clipped.train.clip_grad_norm.has_value());
  EXPECT_DOUBLE_EQ(*clipped.train.clip_grad_norm, 0.5);
  EXPECT_NE(to_yaml(clipped).find("clip_grad_norm: 0.5"), std::string::npos) << to_yaml(clipped);
  EXPECT_EQ(parse(to_yaml(clipped), "round trip"), clipped);

  EXPECT_DOUBLE_EQ(*parse(base, source, {"train.clip_grad_norm=2"}).train.clip_grad_norm, 2.0);
  EXPECT_FALSE(parse(base + "train: {clip_grad_norm: 1}\n", source, {"train.clip_grad_norm=null"})
                   .train.clip_grad_norm.has_value());
}

TEST(RecipeConfig, ClipGradNormMustBePositive) {
  expect_input_error([&] { parse(base + "train: {clip_grad_norm: 0}\n", source); },
                     {source + ": ", "train.clip_grad_norm"});
  expect_input_error([&] { parse(base + "train: {clip_grad_norm: -1.5}\n", source); },
                     {"train.clip_grad_norm"});
  expect_input_error([&] { parse(base, source, {"train.clip_grad_norm=big"}); }, {"train.clip_grad_norm"});
  expect_input_error([&] { parse(base + "train: {clip_grad_nrom: 1}\n", source); },
                     {"unknown key 'train.clip_grad_nrom' (did you mean 'train.clip_grad_norm'?)"});
}

TEST(RecipeConfig, TopKIsSortedWithoutRepeatsAndRoundTrips) {
  const Config plain = parse(base, source);
  EXPECT_TRUE(plain.eval.top_k.empty());
  const Config listed = parse(base + "eval: {top_k: [10, 3, 10]}\n", source);
  EXPECT_EQ(listed.eval.top_k, (std::vector<int>{3, 10}));
  EXPECT_NE(to_yaml(listed).find("top_k: [3, 10]"), std::string::npos) << to_yaml(listed);
  EXPECT_EQ(parse(to_yaml(listed), "round trip"), listed);
  EXPECT_EQ(parse(base, source, {"eval.top_k=[2]"}).eval.top_k, (std::vector<int>{2}));
}

TEST(RecipeConfig, TopKBelowOneOrNotAListIsNamed) {
  expect_input_error([&] { parse(base + "eval: {top_k: [5, 0]}\n", source); },
                     {source + ": ", "eval.top_k[1]"});
  expect_input_error([&] { parse(base + "eval: {top_k: 5}\n", source); }, {"eval.top_k", "list"});
  expect_input_error([&] { parse(base + "eval: {topk: [5]}\n", source); },
                     {"unknown key 'eval.topk' (did you mean 'eval.top_k'?)"});
}

}  // namespace
}  // namespace phalanx::config
