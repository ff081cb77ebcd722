// Tests of data.augment.trivial_augment and data.augment.rand_augment: defaults, parsing, the
// errors that name their key (one of the two at most, RandAugment's bounds) and the round trip
// parse(to_yaml(c)) == c with them on.
#include <gtest/gtest.h>

#include <string>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/auto_augment.yaml";
const std::string model = "model: {preset: lenet5}\n";

TEST(AutoAugmentConfig, OffByDefaultWithTorchvisionsRandAugmentValues) {
  const AugmentConfig augment = parse(model + "data: {path: d.h5}\n", source).data.augment;
  EXPECT_FALSE(augment.trivial_augment);
  EXPECT_EQ(augment.rand_augment.num_ops, 0);
  EXPECT_EQ(augment.rand_augment.magnitude, 9);
  EXPECT_EQ(augment.rand_augment.magnitude_bins, 31);
}

TEST(AutoAugmentConfig, ParsesBothPoliciesAndRoundTrips) {
  const Config trivial =
      parse(model + "data: {path: d.h5, augment: {horizontal_flip: true, trivial_augment: true}}\n", source);
  EXPECT_TRUE(trivial.data.augment.trivial_augment);
  const Config rand = parse(model + R"(
data:
  path: d.h5
  augment:
    random_crop_padding: 4
    rand_augment: {num_ops: 3, magnitude: 14, magnitude_bins: 21}
)",
                            source);
  EXPECT_EQ(rand.data.augment.rand_augment, (RandAugmentConfig{3, 14, 21}));
  for (const Config* config : {&trivial, &rand}) EXPECT_EQ(parse(to_yaml(*config), source), *config);
  const Config set = parse(model + "data: {path: d.h5}\n", source, {"data.augment.rand_augment.num_ops=2"});
  EXPECT_EQ(set.data.augment.rand_augment, (RandAugmentConfig{2, 9, 31}));
}

TEST(AutoAugmentConfig, ErrorsNameTheKey) {
  const auto expect_error = [](const std::string& augment, const std::string& fragment) {
    SCOPED_TRACE(augment);
    expect_input_error([&] { parse(model + "data: {path: d.h5, augment: " + augment + "}\n", source); },
                       {source + ": ", fragment});
  };
  const std::string key = "data.augment.rand_augment.";
  expect_error("{trivial_augment: true, rand_augment: {num_ops: 2}}",
               "data.augment.trivial_augment: TrivialAugment and RandAugment");
  expect_error("{trivial_augment: 3}", "data.augment.trivial_augment");
  expect_error("{rand_augment: {num_ops: 5}}", key + "num_ops: at most 4 ops per image, got 5");
  expect_error("{rand_augment: {num_ops: -1}}", key + "num_ops");
  expect_error("{rand_augment: {num_ops: 2, magnitude: 31}}",
               key + "magnitude: a bin below magnitude_bins (31), got 31");
  expect_error("{rand_augment: {num_ops: 2, magnitude: -1}}", key + "magnitude");
  expect_error("{rand_augment: {num_ops: 2, magnitude_bins: 1}}", key + "magnitude_bins");
  expect_error("{rand_augment: {num_ops: 2, magnitude_bins: 5}}",
               key + "magnitude_bins: must exceed the magnitude bin 9");
  expect_error("{rand_augment: {ops: 2}}", "unknown key 'data.augment.rand_augment.ops'");
  expect_error("{rand_augment: 2}", "data.augment.rand_augment: expected a mapping");
}

}  // namespace
}  // namespace phalanx::config
