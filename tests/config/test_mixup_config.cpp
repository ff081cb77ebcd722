// train.mixup: off by default and absent from the resolved YAML then; parsed, written and read
// back when on; an alpha <= 0 given outright and a probability outside [0, 1] are refused naming
// the key (exit status 2), and unknown keys get a suggestion.
#include <gtest/gtest.h>

#include <string>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/mixup.yaml";
const std::string base = "model: {preset: lenet5}\ndata: {path: d.h5}\n";

TEST(MixupConfig, OffByDefaultAndNotWritten) {
  const Config plain = parse(base, source);
  EXPECT_FALSE(plain.train.mixup.enabled());
  EXPECT_EQ(to_yaml(plain).find("mixup"), std::string::npos) << to_yaml(plain);
  EXPECT_EQ(parse(to_yaml(plain), "round trip"), plain);
}

TEST(MixupConfig, ParsedAndRoundTripped) {
  const Config both = parse(base +
                                "train: {mixup: {mixup_alpha: 0.8, cutmix_alpha: 1.0, probability: 0.7, "
                                "switch_probability: 0.25}}\n",
                            source);
  const MixupConfig& mixup = both.train.mixup;
  EXPECT_TRUE(mixup.enabled());
  EXPECT_DOUBLE_EQ(mixup.mixup_alpha, 0.8);
  EXPECT_DOUBLE_EQ(mixup.cutmix_alpha, 1.0);
  EXPECT_DOUBLE_EQ(mixup.probability, 0.7);
  EXPECT_DOUBLE_EQ(mixup.switch_probability, 0.25);
  EXPECT_EQ(parse(to_yaml(both), "round trip"), both);

  // One method alone: the other alpha is written null and reads back as off.
  const Config cutmix_only = parse(base + "train: {mixup: {cutmix_alpha: 1}}\n", source);
  EXPECT_TRUE(cutmix_only.train.mixup.enabled());
  EXPECT_EQ(cutmix_only.train.mixup.mixup_alpha, 0.0);
  EXPECT_DOUBLE_EQ(cutmix_only.train.mixup.probability, 1.0);
  EXPECT_DOUBLE_EQ(cutmix_only.train.mixup.switch_probability, 0.5);
  EXPECT_EQ(parse(to_yaml(cutmix_only), "round trip"), cutmix_only);

  // A probability without an alpha mixes nothing, and still reads back as it was written.
  const Config probability_only = parse(base + "train: {mixup: {probability: 0.3}}\n", source);
  EXPECT_FALSE(probability_only.train.mixup.enabled());
  EXPECT_EQ(parse(to_yaml(probability_only), "round trip"), probability_only);

  EXPECT_DOUBLE_EQ(parse(base, source, {"train.mixup.mixup_alpha=0.2"}).train.mixup.mixup_alpha, 0.2);
  EXPECT_FALSE(parse(base + "train: {mixup: {mixup_alpha: 0.2}}\n", source, {"train.mixup.mixup_alpha=null"})
                   .train.mixup.enabled());
}

TEST(MixupConfig, AlphaAtOrBelowZeroIsRefusedNamingTheKey) {
  expect_input_error([&] { parse(base + "train: {mixup: {mixup_alpha: 0}}\n", source); },
                     {source + ": ", "train.mixup.mixup_alpha"});
  expect_input_error([&] { parse(base + "train: {mixup: {cutmix_alpha: -1}}\n", source); },
                     {"train.mixup.cutmix_alpha"});
  expect_input_error([&] { parse(base, source, {"train.mixup.cutmix_alpha=0"}); },
                     {"train.mixup.cutmix_alpha"});
}

TEST(MixupConfig, ProbabilitiesOutsideZeroToOneAreRefusedNamingTheKey) {
  expect_input_error([&] { parse(base + "train: {mixup: {mixup_alpha: 1, probability: 1.5}}\n", source); },
                     {source + ": ", "train.mixup.probability"});
  expect_input_error(
      [&] { parse(base + "train: {mixup: {mixup_alpha: 1, switch_probability: -0.1}}\n", source); },
      {"train.mixup.switch_probability"});
  expect_input_error([&] { parse(base + "train: {mixup: {mix_alpha: 1}}\n", source); },
                     {"unknown key 'train.mixup.mix_alpha' (did you mean 'train.mixup.mixup_alpha'?)"});
}

}  // namespace
}  // namespace phalanx::config
