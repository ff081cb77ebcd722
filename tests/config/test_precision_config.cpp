// Tests of the mixed-precision keys: train.loss_scale and train.loss_scale_initial, and
// distributed.grad_dtype — defaults, parsing, the errors that name the key, and the round trip.
#include <gtest/gtest.h>

#include <string>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string source = "configs/precision.yaml";
const std::string base = "model: {preset: lenet5}\ndata: {path: d.h5}\n";

TEST(PrecisionConfig, Defaults) {
  const Config config = parse(base, source);
  EXPECT_EQ(config.train.precision, "fp32");
  EXPECT_EQ(config.train.loss_scale, "auto");
  EXPECT_EQ(config.train.loss_scale_initial, 65536.0);
  EXPECT_EQ(config.distributed.grad_dtype, "fp32");
}

TEST(PrecisionConfig, ParsesAndRoundTrips) {
  const Config config = parse(base +
                                  "train: {precision: fp16, loss_scale: dynamic, loss_scale_initial: 1024}\n"
                                  "distributed: {grad_dtype: bf16}\n",
                              source);
  EXPECT_EQ(config.train.precision, "fp16");
  EXPECT_EQ(config.train.loss_scale, "dynamic");
  EXPECT_EQ(config.train.loss_scale_initial, 1024.0);
  EXPECT_EQ(config.distributed.grad_dtype, "bf16");
  EXPECT_EQ(parse(to_yaml(config), "round trip"), config);
  EXPECT_EQ(parse(base, source, {"train.loss_scale=none", "distributed.grad_dtype=bf16"}).train.loss_scale,
            "none");
}

TEST(PrecisionConfig, BadValuesNameTheKey) {
  expect_input_error([&] { parse(base + "train: {loss_scale: dynamc}\n", source); },
                     {source + ": ", "train.loss_scale: unknown value 'dynamc' (did you mean 'dynamic'?)"});
  expect_input_error([&] { parse(base + "train: {loss_scale_initial: 0}\n", source); },
                     {source + ": ", "train.loss_scale_initial"});
  expect_input_error([&] { parse(base + "distributed: {grad_dtype: fp8}\n", source); },
                     {source + ": ", "distributed.grad_dtype: unknown value 'fp8'"});
  expect_input_error([&] { parse(base + "distributed: {grad_type: bf16}\n", source); },
                     {"unknown key 'distributed.grad_type' (did you mean 'distributed.grad_dtype'?)"});
}

}  // namespace
}  // namespace phalanx::config
