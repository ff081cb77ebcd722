// Tests of the data.augment section: defaults, parsing, range and type errors, the did-you-mean
// for its keys, `--set` on its nested keys, and parse(to_yaml(c)) == c with augmentation on.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/augment.yaml";
const std::string model = "model: {preset: lenet5}\n";

TEST(AugmentConfig, OffByDefault) {
  const Config config = parse(model + "data: {path: d.h5}\n", source);
  EXPECT_EQ(config.data.augment.random_crop_padding, 0);
  EXPECT_FALSE(config.data.augment.horizontal_flip);
  EXPECT_EQ(config.data.augment.cutout, 0);
  EXPECT_EQ(config.data.augment, AugmentConfig{});
}

TEST(AugmentConfig, ParsesEveryKey) {
  const Config config = parse(model + R"(
data:
  path: d.h5
  augment:
    random_crop_padding: 4
    horizontal_flip: true
    cutout: 8
)",
                              source);
  EXPECT_EQ(config.data.augment.random_crop_padding, 4);
  EXPECT_TRUE(config.data.augment.horizontal_flip);
  EXPECT_EQ(config.data.augment.cutout, 8);
}

TEST(AugmentConfig, RandomErasingIsOffByDefaultWithTorchvisionsRanges) {
  const RandomErasingConfig erasing =
      parse(model + "data: {path: d.h5}\n", source).data.augment.random_erasing;
  EXPECT_EQ(erasing.probability, 0.0);
  EXPECT_EQ(erasing.scale, (std::array<double, 2>{0.02, 0.33}));
  EXPECT_EQ(erasing.ratio, (std::array<double, 2>{0.3, 3.3}));
  const Config config = parse(model + R"(
data:
  path: d.h5
  augment:
    random_erasing: {probability: 0.25, scale: [0.1, 1], ratio: [0.5, 0.5]}
)",
                              source);
  EXPECT_EQ(config.data.augment.random_erasing.probability, 0.25);
  EXPECT_EQ(config.data.augment.random_erasing.scale, (std::array<double, 2>{0.1, 1.0}));
  EXPECT_EQ(config.data.augment.random_erasing.ratio, (std::array<double, 2>{0.5, 0.5}));
}

TEST(AugmentConfig, RandomErasingRangeErrorsNameTheKey) {
  const auto expect_error = [](const std::string& erasing, const std::string& fragment) {
    SCOPED_TRACE(erasing);
    expect_input_error(
        [&] { parse(model + "data: {path: d.h5, augment: {random_erasing: " + erasing + "}}\n", source); },
        {source + ": ", fragment});
  };
  const std::string key = "data.augment.random_erasing.";
  expect_error("{probability: 1.5}", key + "probability must be");
  expect_error("{probability: -0.1}", key + "probability must be");
  expect_error("{scale: [0.5, 0.1]}", key + "scale: the range is empty (low 0.5 > high 0.1)");
  expect_error("{scale: [0, 0.3]}", key + "scale must be in (0, 1] (got 0)");
  expect_error("{scale: [0.1, 1.5]}", key + "scale must be in (0, 1] (got 1.5)");
  expect_error("{scale: 0.3}", key + "scale: expected a range [low, high], got");
  expect_error("{scale: [0.1, 0.2, 0.3]}", key + "scale: expected a range [low, high], got");
  expect_error("{ratio: [2, 1]}", key + "ratio: the range is empty (low 2 > high 1)");
  expect_error("{ratio: [0, 1]}", key + "ratio must be > 0 (got 0)");
  expect_error("{ratio: [-1, 1]}", key + "ratio must be > 0 (got -1)");
  expect_error("{ratio: [a, 1]}", key + "ratio: expected a number");
  expect_error("{p: 0.5}", "unknown key 'data.augment.random_erasing.p'");
  expect_error("0.5", "data.augment.random_erasing: expected a mapping");
  // Through --set as well, naming the key and the override.
  expect_input_error(
      [&] {
        parse(model + "data: {path: d.h5}\n", source, {"data.augment.random_erasing.scale=[0.4, 0.2]"});
      },
      {key + "scale: the range is empty", "--set"});
  const Config config =
      parse(model + "data: {path: d.h5}\n", source,
            {"data.augment.random_erasing.probability=0.5", "data.augment.random_erasing.ratio=[0.25, 4]"});
  EXPECT_EQ(config.data.augment.random_erasing.probability, 0.5);
  EXPECT_EQ(config.data.augment.random_erasing.ratio, (std::array<double, 2>{0.25, 4.0}));
}

TEST(AugmentConfig, RandomResizedCropTakesTorchvisionsRangesAndTheEvaluationResize) {
  EXPECT_FALSE(parse(model + "data: {path: d.h5}\n", source).data.augment.random_resized_crop);
  const Config defaults =
      parse(model + "data: {path: d.h5, augment: {random_resized_crop: {size: 24}}}\n", source);
  ASSERT_TRUE(defaults.data.augment.random_resized_crop);
  EXPECT_EQ(defaults.data.augment.random_resized_crop->size, 24);
  EXPECT_EQ(defaults.data.augment.random_resized_crop->scale, (std::array<double, 2>{0.08, 1.0}));
  EXPECT_EQ(defaults.data.augment.random_resized_crop->ratio, (std::array<double, 2>{3.0 / 4.0, 4.0 / 3.0}));
  EXPECT_EQ(defaults.data.eval_resize, 0);
  const Config config = parse(model + R"(
data:
  path: d.h5
  eval_resize: 26
  augment:
    random_resized_crop: {size: 24, scale: [0.35, 1], ratio: [0.5, 2]}
    horizontal_flip: true
)",
                              source);
  EXPECT_EQ(config.data.augment.random_resized_crop->scale, (std::array<double, 2>{0.35, 1.0}));
  EXPECT_EQ(config.data.augment.random_resized_crop->ratio, (std::array<double, 2>{0.5, 2.0}));
  EXPECT_EQ(config.data.eval_resize, 26);
  EXPECT_EQ(parse(to_yaml(config), source), config);
  EXPECT_EQ(parse(to_yaml(defaults), source), defaults);
  // A config without it writes no key of it: its text is the one it always had.
  EXPECT_EQ(to_yaml(parse(model + "data: {path: d.h5}\n", source)).find("resize"), std::string::npos);
  // --set turns it on.
  const Config set = parse(model + "data: {path: d.h5}\n", source,
                           {"data.augment.random_resized_crop.size=20", "data.eval_resize=22"});
  ASSERT_TRUE(set.data.augment.random_resized_crop);
  EXPECT_EQ(set.data.augment.random_resized_crop->size, 20);
  EXPECT_EQ(set.data.eval_resize, 22);
}

TEST(AugmentConfig, RandomResizedCropErrorsNameTheKey) {
  const auto expect_error = [](const std::string& data, const std::string& fragment) {
    SCOPED_TRACE(data);
    expect_input_error([&] { parse(model + "data: {path: d.h5, " + data + "}\n", source); },
                       {source + ": ", fragment});
  };
  const std::string key = "data.augment.random_resized_crop.";
  const auto crop = [](const std::string& body) { return "augment: {random_resized_crop: " + body + "}"; };
  expect_error(crop("{size: 0}"), key + "size must be >= 1 (got 0)");
  expect_error(crop("{size: -4}"), key + "size must be >= 1 (got -4)");
  expect_error(crop("{scale: [0.1, 1]}"), key + "size is required");
  expect_error(crop("{size: 8, scale: [0.9, 0.2]}"), key + "scale: the range is empty (low 0.9 > high 0.2)");
  expect_error(crop("{size: 8, scale: [0, 1]}"), key + "scale must be in (0, 1] (got 0)");
  expect_error(crop("{size: 8, scale: [0.5, 1.2]}"), key + "scale must be in (0, 1] (got 1.2)");
  expect_error(crop("{size: 8, ratio: [2, 0.5]}"), key + "ratio: the range is empty (low 2 > high 0.5)");
  expect_error(crop("{size: 8, ratio: [0, 1]}"), key + "ratio must be > 0 (got 0)");
  expect_error(crop("{size: 8, ratio: [-1, 1]}"), key + "ratio must be > 0 (got -1)");
  expect_error(crop("{size: 8, scales: [0.1, 1]}"), "unknown key 'data.augment.random_resized_crop.scales'");
  expect_error("augment: {random_resized_crop: {size: 8}, random_crop_padding: 2}",
               "data.augment.random_crop_padding: a padded random crop and data.augment.random_resized_crop "
               "are both on");
  expect_error("eval_resize: 7, " + crop("{size: 8}"),
               "data.eval_resize: 7 is smaller than the centre crop of the training size 8");
  expect_error("eval_resize: 0, " + crop("{size: 8}"), "data.eval_resize must be >= 1 (got 0)");
  expect_error("eval_resize: 32", "data.eval_resize resizes evaluation images to the training size");
}

TEST(AugmentConfig, EmptyOrNullSectionKeepsDefaults) {
  EXPECT_EQ(parse(model + "data: {path: d.h5, augment: {}}\n", source).data.augment, AugmentConfig{});
  EXPECT_EQ(parse(model + "data: {path: d.h5, augment: null}\n", source).data.augment, AugmentConfig{});
}

TEST(AugmentConfig, RangeAndTypeErrors) {
  const auto expect_error = [](const std::string& augment, const std::string& fragment) {
    SCOPED_TRACE(augment);
    expect_input_error([&] { parse(model + "data: {path: d.h5, augment: " + augment + "}\n", source); },
                       {source + ": ", fragment});
  };
  expect_error("{random_crop_padding: -1}", "data.augment.random_crop_padding must be >= 0 (got -1)");
  expect_error("{cutout: -3}", "data.augment.cutout must be >= 0 (got -3)");
  expect_error("{cutout: 2.5}", "data.augment.cutout");
  expect_error("{horizontal_flip: sometimes}", "data.augment.horizontal_flip");
  expect_error("[4]", "data.augment: expected a mapping");
}

TEST(AugmentConfig, UnknownKeysSuggestTheNearest) {
  expect_input_error(
      [&] { parse(model + "data: {path: d.h5, augment: {horizontal_flips: true}}\n", source); },
      {source + ": ",
       "unknown key 'data.augment.horizontal_flips' (did you mean 'data.augment.horizontal_flip'?)"});
  expect_input_error([&] { parse(model + "data: {path: d.h5, augments: {cutout: 4}}\n", source); },
                     {"unknown key 'data.augments' (did you mean 'data.augment'?)"});
  // A key of the section written one level up is found by its last word.
  expect_input_error([&] { parse(model + "data: {path: d.h5, cutout: 4}\n", source); },
                     {"unknown key 'data.cutout' (did you mean 'data.augment.cutout'?)"});
}

TEST(AugmentConfig, OverridesReachTheNestedSection) {
  const Config config = parse(
      model + "data: {path: d.h5, augment: {cutout: 4}}\n", source,
      {"data.augment.random_crop_padding=2", "data.augment.horizontal_flip=true", "data.augment.cutout=0"});
  EXPECT_EQ(config.data.augment.random_crop_padding, 2);
  EXPECT_TRUE(config.data.augment.horizontal_flip);
  EXPECT_EQ(config.data.augment.cutout, 0);
  // The section is created when the file has none.
  EXPECT_EQ(parse(model + "data: {path: d.h5}\n", source, {"data.augment.cutout=6"}).data.augment.cutout, 6);
  expect_input_error([&] { parse(model + "data: {path: d.h5}\n", source, {"data.augment=1"}); },
                     {"'data.augment' is a section; set its keys one at a time (e.g. "
                      "data.augment.random_crop_padding=...)"});
  expect_input_error([&] { parse(model + "data: {path: d.h5}\n", source, {"data.augment.cutuot=4"}); },
                     {"unknown key 'data.augment.cutuot' (did you mean 'data.augment.cutout'?)"});
  expect_input_error([&] { parse(model + "data: {path: d.h5}\n", source, {"data.augment.cutout=-1"}); },
                     {"data.augment.cutout must be >= 0 (got -1)"});
}

TEST(AugmentConfig, RoundTripsThroughToYaml) {
  const Config config = parse(
      model + "data: {path: d.h5, augment: {random_crop_padding: 4, horizontal_flip: true, cutout: 16}}\n",
      source);
  const std::string yaml = to_yaml(config);
  for (const char* key : {"augment:", "random_crop_padding: 4", "horizontal_flip: true", "cutout: 16"}) {
    EXPECT_NE(yaml.find(key), std::string::npos) << key << " in\n" << yaml;
  }
  EXPECT_EQ(parse(yaml, source), config);
  // Augmentation changes the trajectory, so the hash must see it.
  Config changed = config;
  changed.data.augment.cutout = 15;
  EXPECT_NE(hash(changed), hash(config));
  // Random erasing, with values whose shortest text is long, reads back exactly.
  Config erasing = config;
  erasing.data.augment.random_erasing = RandomErasingConfig{0.1, {1.0 / 3.0, 0.7}, {3.0 / 4.0, 4.0 / 3.0}};
  EXPECT_EQ(parse(to_yaml(erasing), source), erasing);
  EXPECT_NE(hash(erasing), hash(config));
}

}  // namespace
}  // namespace phalanx::config
