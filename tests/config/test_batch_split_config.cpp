// Tests of distributed.batch_split and distributed.local_batches: defaults, parsing from the file
// and from --set, the round trip through to_yaml, and the errors that name the key.
#include <gtest/gtest.h>

#include <string>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/split.yaml";
const std::string base = "model: {preset: lenet5}\ndata: {path: d.h5}\n";

TEST(BatchSplitConfig, DefaultsToTheEqualSplit) {
  const Config config = parse(base, source);
  EXPECT_EQ(phalanx::config::name_of(config.distributed.batch_split), "equal");
  EXPECT_TRUE(config.distributed.local_batches.empty());
  EXPECT_EQ(parse(to_yaml(config), "round trip"), config);
}

TEST(BatchSplitConfig, ParsesAndRoundTrips) {
  const Config config =
      parse(base + "distributed: {batch_split: throughput, local_batches: [40, 24, 1]}\n", source);
  EXPECT_EQ(phalanx::config::name_of(config.distributed.batch_split), "throughput");
  EXPECT_EQ(config.distributed.local_batches, (std::vector<int>{40, 24, 1}));
  EXPECT_EQ(parse(to_yaml(config), "round trip"), config);
  EXPECT_NE(hash(config), hash(parse(base, source))) << "ranks with another split must not agree";
  const Config overridden = parse(base, source, {"distributed.local_batches=[7, 9]"});
  EXPECT_EQ(overridden.distributed.local_batches, (std::vector<int>{7, 9}));
}

TEST(BatchSplitConfig, BadValuesNameTheKey) {
  expect_input_error([&] { parse(base + "distributed: {batch_split: fast}\n", source); },
                     {source + ": ", "distributed.batch_split: unknown value 'fast'", "throughput"});
  expect_input_error([&] { parse(base + "distributed: {batch_split: throughput2}\n", source); },
                     {"did you mean 'throughput'?"});
  expect_input_error([&] { parse(base + "distributed: {local_batches: [40, 0]}\n", source); },
                     {source + ": ", "distributed.local_batches[1] must be >= 1 (got 0)"});
  expect_input_error([&] { parse(base + "distributed: {local_batches: [40, -3]}\n", source); },
                     {"distributed.local_batches[1]"});
  expect_input_error([&] { parse(base + "distributed: {local_batches: 64}\n", source); },
                     {"distributed.local_batches: expected a list of local batch sizes"});
  expect_input_error([&] { parse(base + "distributed: {local_batches: [a, 2]}\n", source); },
                     {"distributed.local_batches[0]"});
  expect_input_error([&] { parse(base + "distributed: {local_batch: [2, 2]}\n", source); },
                     {"unknown key 'distributed.local_batch' (did you mean 'distributed.local_batches'?)"});
}

}  // namespace
}  // namespace phalanx::config
