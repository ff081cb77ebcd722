// train.nonfinite: what a step whose gradients are not finite does. The default, both values
// through the resolved YAML and --set, and an unknown value or a misspelt key named.
#include <gtest/gtest.h>

#include <string>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/nonfinite.yaml";
const std::string base = "model: {preset: lenet5}\ndata: {path: d.h5}\n";

TEST(NonFiniteConfig, StopByDefaultSkipOnRequestAndRoundTrips) {
  EXPECT_EQ(phalanx::config::name_of(parse(base, source).train.nonfinite), "stop");
  const Config skipping = parse(base + "train: {nonfinite: skip}\n", source);
  EXPECT_EQ(phalanx::config::name_of(skipping.train.nonfinite), "skip");
  EXPECT_NE(to_yaml(skipping).find("nonfinite: \"skip\""), std::string::npos) << to_yaml(skipping);
  EXPECT_EQ(parse(to_yaml(skipping), "round trip"), skipping);
  EXPECT_EQ(parse(base, source, {"train.nonfinite=skip"}).train.nonfinite, NonFinite::Skip);
}

TEST(NonFiniteConfig, UnknownValuesAndKeysAreNamed) {
  expect_input_error([&] { parse(base + "train: {nonfinite: ignore}\n", source); },
                     {source + ": ", "train.nonfinite", "stop", "skip"});
  expect_input_error([&] { parse(base, source, {"train.nonfinite=true"}); }, {"train.nonfinite"});
  expect_input_error([&] { parse(base + "train: {non_finite: skip}\n", source); },
                     {"unknown key 'train.non_finite' (did you mean 'train.nonfinite'?)"});
}

}  // namespace
}  // namespace phalanx::config
