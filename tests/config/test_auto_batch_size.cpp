// train.batch_size: auto — parsed as a flag beside the number, written back as `auto`, settable
// with --set; other words are still errors naming the key.
#include <gtest/gtest.h>

#include <string>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/auto.yaml";
const std::string base = "model: {preset: lenet5}\ndata: {path: d.h5}\n";

TEST(AutoBatchSize, ParsesRoundTripsAndOverrides) {
  const Config automatic = parse(base + "train: {batch_size: auto}\n", source);
  EXPECT_TRUE(automatic.train.batch_size_auto);
  EXPECT_NE(to_yaml(automatic).find("batch_size: auto"), std::string::npos) << to_yaml(automatic);
  EXPECT_EQ(parse(to_yaml(automatic), "round trip"), automatic);
  const Config numbered = parse(base + "train: {batch_size: 96}\n", source);
  EXPECT_FALSE(numbered.train.batch_size_auto);
  EXPECT_EQ(numbered.train.batch_size, 96);
  EXPECT_TRUE(parse(base, source, {"train.batch_size=auto"}).train.batch_size_auto);
  // A number given later replaces auto.
  const Config replaced = parse(base + "train: {batch_size: auto}\n", source, {"train.batch_size=32"});
  EXPECT_FALSE(replaced.train.batch_size_auto);
  EXPECT_EQ(replaced.train.batch_size, 32);
}

TEST(AutoBatchSize, OtherWordsAndBadNumbersNameTheKey) {
  expect_input_error([&] { parse(base + "train: {batch_size: automatic}\n", source); },
                     {source + ": ", "train.batch_size"});
  expect_input_error([&] { parse(base + "train: {batch_size: 0}\n", source); },
                     {source + ": ", "train.batch_size must be >= 1"});
}

}  // namespace
}  // namespace phalanx::config
