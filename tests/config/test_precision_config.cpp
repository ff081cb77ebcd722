// Tests of the mixed-precision keys: train.loss_scale, train.loss_scale_initial,
// train.activation_dtype and train.deterministic, and distributed.grad_dtype — defaults, parsing, the errors
// that name the key, and the round trip.
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
  EXPECT_EQ(phalanx::config::name_of(config.train.precision), "fp32");
  EXPECT_EQ(phalanx::config::name_of(config.train.loss_scale), "auto");
  EXPECT_EQ(config.train.loss_scale_initial, 65536.0);
  EXPECT_EQ(phalanx::config::name_of(config.distributed.grad_dtype), "fp32");
  EXPECT_EQ(phalanx::config::name_of(config.train.activation_dtype), "fp32");
  EXPECT_TRUE(config.train.deterministic);
}

// train.deterministic: a boolean, kept through the resolved YAML, and anything else named.
TEST(PrecisionConfig, DeterministicIsABooleanThatRoundTrips) {
  const Config fastest = parse(base + "train: {deterministic: false}\n", source);
  EXPECT_FALSE(fastest.train.deterministic);
  EXPECT_NE(to_yaml(fastest).find("deterministic: false"), std::string::npos) << to_yaml(fastest);
  EXPECT_EQ(parse(to_yaml(fastest), "round trip"), fastest);
  EXPECT_NE(parse(base, source), fastest);
  EXPECT_FALSE(parse(base, source, {"train.deterministic=false"}).train.deterministic);
  expect_input_error([&] { parse(base + "train: {deterministic: sometimes}\n", source); },
                     {source + ": ", "train.deterministic"});
  expect_input_error([&] { parse(base + "train: {determinstic: false}\n", source); },
                     {"unknown key 'train.determinstic' (did you mean 'train.deterministic'?)"});
}

TEST(PrecisionConfig, ParsesAndRoundTrips) {
  const Config config = parse(base +
                                  "train: {precision: fp16, loss_scale: dynamic, loss_scale_initial: 1024}\n"
                                  "distributed: {grad_dtype: bf16}\n",
                              source);
  EXPECT_EQ(phalanx::config::name_of(config.train.precision), "fp16");
  EXPECT_EQ(phalanx::config::name_of(config.train.loss_scale), "dynamic");
  EXPECT_EQ(config.train.loss_scale_initial, 1024.0);
  EXPECT_EQ(phalanx::config::name_of(config.distributed.grad_dtype), "bf16");
  EXPECT_EQ(parse(to_yaml(config), "round trip"), config);
  EXPECT_EQ(parse(base, source, {"train.loss_scale=none", "distributed.grad_dtype=bf16"}).train.loss_scale,
            LossScale::None);
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

// Activations are held in fp32 or in the compute precision itself.
TEST(PrecisionConfig, ActivationDtypeIsFp32OrTheComputePrecision) {
  for (const std::string precision : {"bf16", "fp16"}) {
    const Config config =
        parse(base + "train: {precision: " + precision + ", activation_dtype: " + precision + "}\n", source);
    EXPECT_EQ(phalanx::config::name_of(config.train.activation_dtype), precision);
    EXPECT_EQ(parse(to_yaml(config), "round trip"), config);
    EXPECT_NE(to_yaml(config).find("activation_dtype: \"" + precision + "\""), std::string::npos)
        << to_yaml(config);
    EXPECT_EQ(parse(base + "train: {precision: " + precision + ", activation_dtype: fp32}\n", source)
                  .train.activation_dtype,
              Precision::Fp32);
    // The same through --set, in either order of the two keys.
    EXPECT_EQ(name_of(parse(base, source, {"train.activation_dtype=" + precision, "train.precision=" + precision})
                          .train.activation_dtype),
              precision);
  }
  // A different activation dtype changes the resolved config, so ranks that disagree are caught.
  EXPECT_NE(hash(parse(base + "train: {precision: bf16}\n", source)),
            hash(parse(base + "train: {precision: bf16, activation_dtype: bf16}\n", source)));
}

TEST(PrecisionConfig, ActivationDtypeErrorsNameTheKeyAndTheRule) {
  expect_input_error([&] { parse(base + "train: {activation_dtype: bf61}\n", source); },
                     {source + ": ", "train.activation_dtype: unknown value 'bf61' (did you mean 'bf16'?)"});
  expect_input_error([&] { parse(base + "train: {activation_dtype: float8}\n", source); },
                     {"train.activation_dtype: unknown value 'float8' (allowed: fp32, bf16, fp16, auto)"});
  expect_input_error(
      [&] { parse(base + "train: {activation_dtype: bf16}\n", source); },
      {source + ": ",
       "train.activation_dtype: bf16 must be fp32, auto or equal to train.precision, which is fp32",
       "(line 3)"});
  expect_input_error(
      [&] { parse(base + "train: {precision: bf16, activation_dtype: fp16}\n", source); },
      {"train.activation_dtype: fp16 must be fp32, auto or equal to train.precision, which is bf16"});
  expect_input_error(
      [&] { parse(base, source, {"train.activation_dtype=fp16"}); },
      {"train.activation_dtype: fp16 must be fp32, auto or equal to train.precision, which is fp32",
       "(from --set train.activation_dtype)"});
  expect_input_error([&] { parse(base + "train: {activation_type: bf16}\n", source); },
                     {"unknown key 'train.activation_type' (did you mean 'train.activation_dtype'?)"});
  // Micro-batches work in fp32 elements: reduced activations with gradient accumulation are refused,
  // one micro-batch per step is not.
  expect_input_error(
      [&] {
        parse(base + "train: {precision: bf16, activation_dtype: bf16, accumulation_steps: 2}\n", source);
      },
      {"train.activation_dtype: bf16 cannot be combined with gradient accumulation "
       "(train.accumulation_steps: 2)"});
  EXPECT_EQ(parse(base + "train: {precision: bf16, activation_dtype: bf16, accumulation_steps: 1}\n", source)
                .train.activation_dtype,
            Precision::Bf16);
}

// auto: resolved per rank at start (train::resolve_arithmetic), so the config keeps the word:
// a resumed run compares it unresolved, and a checkpoint moved to another CPU resolves anew.
TEST(PrecisionConfig, AutoIsKeptAsWrittenAndCombinesWithAnything) {
  const Config config = parse(base + "train: {precision: auto, activation_dtype: auto}\n", source);
  EXPECT_EQ(phalanx::config::name_of(config.train.precision), "auto");
  EXPECT_EQ(phalanx::config::name_of(config.train.activation_dtype), "auto");
  EXPECT_EQ(parse(to_yaml(config), "round trip"), config);
  EXPECT_NE(hash(config), hash(parse(base + "train: {precision: bf16, activation_dtype: bf16}\n", source)));
  // auto activations go with any compute precision, and with gradient accumulation (they are
  // fp32 then); a reduced precision named outright needs that precision named, not auto.
  for (const std::string precision : {"fp32", "bf16", "fp16", "auto"})
    EXPECT_EQ(
        parse(base + "train: {precision: " + precision + ", activation_dtype: auto, accumulation_steps: 2}\n",
              source)
            .train.activation_dtype,
        Precision::Auto);
  EXPECT_EQ(parse(base + "train: {precision: auto, activation_dtype: fp32}\n", source).train.activation_dtype,
            Precision::Fp32);
  expect_input_error(
      [&] { parse(base + "train: {precision: auto, activation_dtype: bf16}\n", source); },
      {source + ": ",
       "train.activation_dtype: bf16 must be fp32, auto or equal to train.precision, which is auto"});
  expect_input_error([&] { parse(base + "train: {precision: atuo}\n", source); },
                     {"train.precision: unknown value 'atuo' (did you mean 'auto'?)"});
}

}  // namespace
}  // namespace phalanx::config
