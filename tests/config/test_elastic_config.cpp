// Tests of the elastic keys (resuming with another world size or global batch): defaults,
// parsing, --set, the round trip through to_yaml, and errors that name the key.
#include <gtest/gtest.h>

#include <string>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/elastic.yaml";
const std::string base = "model: {preset: lenet5}\ndata: {path: d.h5}\n";

TEST(ElasticConfig, DefaultsKeepTheGlobalBatchAndTheRate) {
  const Config config = parse(base, source);
  EXPECT_EQ(phalanx::config::name_of(config.elastic.global_batch), "keep");
  EXPECT_EQ(phalanx::config::name_of(config.elastic.learning_rate_rule), "keep");
  EXPECT_EQ(parse(to_yaml(config), "round trip"), config);
}

TEST(ElasticConfig, ParsesAndRoundTrips) {
  const Config config = parse(base + "elastic: {global_batch: change, learning_rate_rule: sqrt}\n", source);
  EXPECT_EQ(phalanx::config::name_of(config.elastic.global_batch), "change");
  EXPECT_EQ(phalanx::config::name_of(config.elastic.learning_rate_rule), "sqrt");
  EXPECT_EQ(parse(to_yaml(config), "round trip"), config);
  const Config overridden =
      parse(base, source, {"elastic.global_batch=change", "elastic.learning_rate_rule=linear"});
  EXPECT_EQ(phalanx::config::name_of(overridden.elastic.global_batch), "change");
  EXPECT_EQ(phalanx::config::name_of(overridden.elastic.learning_rate_rule), "linear");
}

TEST(ElasticConfig, BadValuesNameTheKey) {
  expect_input_error([&] { parse(base + "elastic: {global_batch: grow}\n", source); },
                     {source + ": ", "elastic.global_batch: unknown value 'grow'", "change"});
  expect_input_error([&] { parse(base + "elastic: {learning_rate_rule: square}\n", source); },
                     {"elastic.learning_rate_rule", "sqrt"});
  expect_input_error([&] { parse(base + "elastic: {global_batches: keep}\n", source); },
                     {"did you mean 'elastic.global_batch'?"});
}

}  // namespace
}  // namespace phalanx::config
