// Tests of config::parse on bad input: every class of user error must be an InvalidInput
// error (exit status 2) whose message names the file, the full dotted key and, where one
// exists, the allowed range or a "did you mean" suggestion.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/expect_input_error.hpp"
#include "config/layer_list_config.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;
using phalanx::testing::expect_layer_error;

const std::string source = "configs/x.yaml";
const std::string base = "model: {preset: lenet5}\ndata: {path: d.h5}\n";

// Parses `base` plus `extra` and expects an error containing `fragments` and the file name.
std::string expect_parse_error(const std::string& extra, std::vector<std::string> fragments) {
  fragments.push_back(source + ": ");
  return expect_input_error([&] { parse(base + extra, source); }, fragments);
}

TEST(ConfigParseErrors, UnknownKeysSuggestTheClosestKey) {
  expect_parse_error("train: {batchsize: 32}\n",
                     {"configs/x.yaml: unknown key 'train.batchsize' (did you mean 'train.batch_size'?)"});
  expect_parse_error("optimiser: {type: sgd}\n", {"unknown key 'optimiser' (did you mean 'optimizer'?)"});
  expect_parse_error("distributed: {timeout: 5}\n",
                     {"unknown key 'distributed.timeout'", "'distributed.timeout_s'"});
}

TEST(ConfigParseErrors, KeyInTheWrongSectionSuggestsItsSection) {
  expect_parse_error("train: {learning_rate: 0.1}\n",
                     {"unknown key 'train.learning_rate' (did you mean 'optimizer.learning_rate'?)"});
  expect_parse_error("epochs: 3\n", {"unknown key 'epochs' (did you mean 'train.epochs'?)"});
}

TEST(ConfigParseErrors, UnknownKeyWithoutNeighbourListsTheAllowedKeys) {
  expect_parse_error("checkpoint: {qqqqqqqqqq: 1}\n",
                     {"unknown key 'checkpoint.qqqqqqqqqq' (allowed: every_steps, keep, keep_best)"});
}

TEST(ConfigParseErrors, DuplicateKeyIsAnError) {
  const std::string message =
      expect_parse_error("train:\n  epochs: 2\n  epochs: 3\n", {"duplicate key 'train.epochs'"});
  EXPECT_NE(message.find("(line 5)"), std::string::npos) << message;
  // A --set of that key does not make the file's duplicate its own.
  const std::string with_set = expect_input_error(
      [&] { parse(base + "train:\n  epochs: 2\n  epochs: 3\n", source, {"train.epochs=4"}); },
      {"duplicate key 'train.epochs' (line 5)"});
  EXPECT_EQ(with_set.find("from --set"), std::string::npos) << with_set;
}

TEST(ConfigParseErrors, WrongTypesNameTheKeyAndTheValue) {
  const std::string message =
      expect_parse_error("train: {batch_size: abc}\n",
                         {"configs/x.yaml: train.batch_size: expected a positive integer, got 'abc'"});
  EXPECT_NE(message.find("(line 3)"), std::string::npos) << message;
  expect_parse_error("train: {epochs: 2.5}\n", {"train.epochs: expected a positive integer, got '2.5'"});
  expect_parse_error("checkpoint: {every_steps: many}\n",
                     {"checkpoint.every_steps: expected a non-negative integer, got 'many'"});
  expect_parse_error("optimizer: {learning_rate: fast}\n",
                     {"optimizer.learning_rate: expected a number, got 'fast'"});
  expect_parse_error("optimizer: {learning_rate: .nan}\n", {"optimizer.learning_rate: expected a number"});
  expect_parse_error("optimizer: {nesterov: maybe}\n",
                     {"optimizer.nesterov: expected true or false, got 'maybe'"});
  expect_parse_error("train: {batch_size: [1, 2]}\n",
                     {"train.batch_size: expected a positive integer, got a list"});
  expect_parse_error("train: {batch_size: }\n",
                     {"train.batch_size: expected a positive integer, got an empty value"});
  expect_parse_error("train: 5\n", {"train: expected a mapping of keys, got '5'"});
  expect_parse_error("name: {first: a}\n", {"name: expected a string, got a mapping"});
  expect_parse_error("seed: -1\n", {"seed must be >= 0 (got -1)"});
  expect_parse_error("seed: 18446744073709551616\n", {"seed must be <= 18446744073709551615"});
  expect_parse_error("seed: 0x10\n", {"seed: expected a non-negative integer, got '0x10'"});
  expect_parse_error("train: {batch_size: 99999999999}\n",
                     {"train.batch_size must be <= 2147483647 (got 99999999999)"});
}

struct RangeCase {
  std::string yaml;
  std::string fragment;
};

TEST(ConfigParseErrors, OutOfRangeValuesNameTheAllowedRange) {
  const std::vector<RangeCase> cases = {
      {"train: {epochs: 0}\n", "train.epochs must be >= 1 (got 0)"},
      {"train: {max_steps: 0}\n", "train.max_steps must be >= 1 (got 0)"},
      {"train: {batch_size: -4}\n", "train.batch_size must be >= 1 (got -4)"},
      {"train: {label_smoothing: 1}\n", "train.label_smoothing must be in [0, 1) (got 1)"},
      {"train: {log_every_steps: 0}\n", "train.log_every_steps must be >= 1 (got 0)"},
      {"optimizer: {learning_rate: 0}\n", "optimizer.learning_rate must be > 0 (got 0)"},
      {"optimizer: {learning_rate: -0.1}\n", "optimizer.learning_rate must be > 0 (got -0.1)"},
      {"optimizer: {momentum: 1.0}\n", "optimizer.momentum must be in [0, 1) (got 1.0)"},
      {"optimizer: {momentum: -0.5}\n", "optimizer.momentum must be in [0, 1) (got -0.5)"},
      {"optimizer: {weight_decay: -1e-4}\n", "optimizer.weight_decay must be >= 0 (got -1e-4)"},
      {"optimizer: {epsilon: 0}\n", "optimizer.epsilon must be > 0 (got 0)"},
      {"schedule: {minimum_factor: 1.5}\n", "schedule.minimum_factor must be in [0, 1] (got 1.5)"},
      {"schedule: {one_cycle_peak_fraction: 0}\n",
       "schedule.one_cycle_peak_fraction must be in (0, 1) (got 0)"},
      {"distributed: {bucket_mb: 0}\n", "distributed.bucket_mb must be in (0, 8191] (got 0)"},
      {"distributed: {bucket_mb: 1e30}\n", "distributed.bucket_mb must be in (0, 8191] (got 1e30)"},
      // 8192 MiB is 2^31 floats: past the int count of one MPI all-reduce.
      {"distributed: {bucket_mb: 8192}\n", "distributed.bucket_mb must be in (0, 8191] (got 8192)"},
      {"distributed: {timeout_s: -1}\n", "distributed.timeout_s must be > 0 (got -1)"},
      {"checkpoint: {every_steps: -1}\n", "checkpoint.every_steps must be >= 0 (got -1)"},
      {"checkpoint: {keep: 0}\n", "checkpoint.keep must be >= 1 (got 0)"},
      {"threads: -2\n", "threads must be in [0, 1024] (got -2)"},
      // OpenMP's runtime crashed starting 100,000 threads
      {"threads: 100000\n", "threads must be in [0, 1024] (got 100000)"},
      {"data: {path: d.h5, prefetch_batches: 0}\n", "data.prefetch_batches must be in [1, 1024] (got 0)"},
      // Sizes that overflowed the memory check's arithmetic, or the cache budget's in bytes.
      {"data: {path: d.h5, prefetch_batches: 2147483647}\n",
       "data.prefetch_batches must be in [1, 1024] (got 2147483647)"},
      {"data: {path: d.h5, max_cache_gb: 1e300}\n", "data.max_cache_gb must be in [0, "},
  };
  for (const RangeCase& range_case : cases) {
    SCOPED_TRACE(range_case.yaml);
    // Later keys in the text replace the base section, so sections are written whole here.
    const bool replaces_data = range_case.yaml.starts_with("data:");
    const std::string yaml =
        replaces_data ? "model: {preset: lenet5}\n" + range_case.yaml : base + range_case.yaml;
    expect_input_error([&] { parse(yaml, source); }, {source + ": " + range_case.fragment});
  }
}

TEST(ConfigParseErrors, UnknownEnumeratedValuesSuggestOrList) {
  expect_parse_error("optimizer: {type: sgdd}\n",
                     {"optimizer.type: unknown value 'sgdd' (did you mean 'sgd'?)"});
  expect_parse_error("schedule: {type: cosin}\n",
                     {"schedule.type: unknown value 'cosin' (did you mean 'cosine'?)"});
  expect_parse_error("device: cuad\n", {"device: unknown value 'cuad' (did you mean 'cuda'?)"});
  expect_parse_error("train: {precision: float32}\n",
                     {"train.precision: unknown value 'float32' (allowed: fp32, bf16, fp16, auto)"});
  expect_input_error([&] { parse("model: {preset: resnet2}\ndata: {path: d.h5}\n", source); },
                     {source + ": model.preset: unknown value 'resnet2' (did you mean 'resnet20'?)"});
  expect_input_error(
      [&] { parse("model: {preset: vgg16}\ndata: {path: d.h5}\n", source); },
      {source + ": model.preset: unknown value 'vgg16' (allowed: fmnist_cnn, lenet5, resnet20, resnet18, resnet50, "
       "mobilenet_v2, mobilenet_v3_small, efficientnet_b0, resnext50_32x4d)"});
}

TEST(ConfigParseErrors, ModelNeedsExactlyOneOfPresetAndLayers) {
  expect_input_error([&] { parse("data: {path: d.h5}\n", source); },
                     {source + ": model: set either 'model.preset'", "or a non-empty 'model.layers' list"});
  expect_input_error([&] { parse("data: {path: d.h5}\nmodel: {layers: []}\n", source); },
                     {source + ": model: set either"});
  expect_input_error(
      [&] { parse("data: {path: d.h5}\nmodel: {preset: lenet5, layers: [{type: relu}]}\n", source); },
      {source + ": model: 'model.preset' and 'model.layers' are both set"});
}

TEST(ConfigParseErrors, DataPathIsRequired) {
  expect_input_error([&] { parse("model: {preset: lenet5}\n", source); },
                     {source + ": data.path is required"});
  expect_input_error([&] { parse("model: {preset: lenet5}\ndata: {path: ''}\n", source); },
                     {source + ": data.path is required"});
  expect_input_error([&] { parse("model: {preset: lenet5}\ndata: {path: d.h5, test_split: ''}\n", source); },
                     {source + ": data.test_split must not be empty"});
}

TEST(ConfigParseErrors, LayerKeysAreCheckedAgainstTheLayerType) {
  expect_layer_error("    - {type: conv, out_channels: 8, kernal: 3}\n",
                     {"unknown key 'model.layers[0].kernal' (did you mean 'model.layers[0].kernel'?)"});
  expect_layer_error(
      "    - {type: relu}\n    - {type: conv, out_channels: 8, out_features: 3}\n",
      {"'model.layers[1].out_features' does not apply to a conv layer",
       "(it takes: type, name, out_channels, kernel, stride, padding, groups, dilation, bias)"});
  expect_layer_error(
      "    - type: residual\n      main:\n        - {type: relu}\n        - {type: conv, out_channels: 4, "
      "strid: 2}\n",
      {"unknown key 'model.layers[0].main[1].strid' (did you mean 'model.layers[0].main[1].stride'?)"});
  expect_layer_error("    - {type: convv, out_channels: 8}\n",
                     {"model.layers[0].type: unknown value 'convv' (did you mean 'conv'?)"});
  expect_layer_error("    - {name: first}\n", {"model.layers[0].type is required (one of: conv, linear"});
  expect_layer_error("    - relu\n",
                     {"model.layers[0]: expected a layer (a mapping with a 'type'), got 'relu'"});
}

TEST(ConfigParseErrors, LayerValuesAreRangeChecked) {
  expect_layer_error("    - {type: conv, kernel: 3}\n",
                     {"model.layers[0].out_channels is required for a conv layer"});
  expect_layer_error("    - {type: conv, out_channels: 0}\n",
                     {"model.layers[0].out_channels must be >= 1 (got 0)"});
  expect_layer_error("    - {type: conv, out_channels: 4, kernel: 0}\n",
                     {"model.layers[0].kernel must be >= 1 (got 0)"});
  expect_layer_error("    - {type: conv, out_channels: 4, stride: 0}\n",
                     {"model.layers[0].stride must be >= 1 (got 0)"});
  expect_layer_error("    - {type: conv, out_channels: 4, padding: -1}\n",
                     {"model.layers[0].padding must be >= 0 (got -1)"});
  expect_layer_error("    - {type: conv, out_channels: 4, groups: 0}\n",
                     {"model.layers[0].groups must be >= 1 (got 0)"});
  expect_layer_error("    - {type: conv, out_channels: 4, groups: -2}\n",
                     {"model.layers[0].groups must be >= 1 (got -2)"});
  expect_layer_error("    - {type: conv, out_channels: 4, dilation: 0}\n",
                     {"model.layers[0].dilation must be >= 1 (got 0)"});
  expect_layer_error("    - {type: conv, out_channels: 4, dilation: 1.5}\n", {"model.layers[0].dilation"});
  expect_layer_error("    - {type: max_pool, kernel: 2, groups: 2}\n",
                     {"'model.layers[0].groups' does not apply to a max_pool layer"});
  expect_layer_error("    - {type: max_pool, stride: -1}\n",
                     {"model.layers[0].stride must be >= 0 (got -1)"});
  expect_layer_error("    - {type: linear}\n",
                     {"model.layers[0].out_features is required for a linear layer"});
  expect_layer_error("    - {type: linear, out_features: -3}\n",
                     {"model.layers[0].out_features must be >= 1 (got -3)"});
  expect_layer_error("    - {type: dropout, probability: 1}\n",
                     {"model.layers[0].probability must be in [0, 1) (got 1)"});
  expect_layer_error("    - {type: residual}\n",
                     {"model.layers[0].main: a residual layer needs a non-empty 'main'"});
  expect_layer_error("    - {type: residual, main: []}\n", {"model.layers[0].main: a residual layer needs"});
  expect_layer_error("    - {type: residual, main: {type: relu}}\n",
                     {"model.layers[0].main: expected a list of layers, got a mapping"});
  expect_layer_error("    - {type: relu, name: act}\n    - {type: relu, name: act}\n",
                     {"model.layers[1].name: duplicate layer name 'act' (also used by model.layers[0])"});
  expect_input_error([&] { parse("data: {path: d.h5}\nmodel: {layers: {type: relu}}\n", source); },
                     {source + ": model.layers: expected a list of layers, got a mapping"});
}

TEST(ConfigParseErrors, EmptyOrMalformedDocuments) {
  expect_input_error([&] { parse("", source); }, {source + ": the configuration is empty"});
  expect_input_error([&] { parse("# only a comment\n", source); }, {source + ": the configuration is empty"});
  expect_input_error([&] { parse("- a\n- b\n", source); },
                     {source + ": expected a mapping of keys at the top level, got a list"});
  expect_input_error([&] { parse(base + "---\nname: second\n", source); },
                     {source + ": holds 2 YAML documents"});
}

TEST(ConfigParseErrors, SyntaxErrorNamesFileAndLine) {
  expect_input_error(
      [&] { parse("model: {preset: lenet5}\ndata: {path: d.h5\ntrain: {epochs: 1}\n", source); },
      {source + ": line ", "YAML syntax error"});
  expect_input_error([&] { parse("name: a\n  seed: 2\n", source); },
                     {source + ": line 2, column", "YAML syntax error"});
}

// A "billion laughs" of YAML aliases: nine lines name 10^8 nested layers. The YAML library keeps
// an alias as one shared node, but a model is built layer by layer, so the layer count stops it
// early (before any large allocation) naming the key where the limit was passed.
TEST(ConfigParseErrors, AliasBombOfLayersIsRefusedBeforeItExpands) {
  std::string layers = "    - &b0 {type: relu}\n";
  for (int level = 1; level <= 8; ++level) {
    layers += "    - &b" + std::to_string(level) + " {type: residual, main: [";
    for (int copy = 0; copy < 10; ++copy) layers += (copy ? ", *b" : "*b") + std::to_string(level - 1);
    layers += "]}\n";
  }
  expect_layer_error(layers, {"model.layers[", "more than 10000 layers"});
}

// Found by the config fuzzer: an alias that names the block it sits in makes that block contain
// itself forever; reading it recursed until the stack overflowed.
TEST(ConfigParseErrors, AliasNamingItsOwnBlockIsRefused) {
  expect_layer_error("    - &block {type: residual, main: [*block]}\n", {"model.layers[0]", "nested more than 64"});
}

// Found by the config fuzzer: bytes that are not UTF-8 went into strings, and the config.yaml
// written from them read back as another config. Refused with the line; UTF-8 names still work.
TEST(ConfigParseErrors, TextThatIsNotUtf8IsRefusedWithItsLine) {
  expect_parse_error("name: \"caf\xff\"\n", {"line 3: not UTF-8 text"});
  expect_input_error([&] { parse(base, source, {"name=caf\xc3"}); }, {source, "--set", "not UTF-8 text"});
  const Config config = parse(base + "name: \"caf\xc3\xa9 \xe2\x82\xac\"\n", source);
  EXPECT_EQ(config.name, "caf\xc3\xa9 \xe2\x82\xac");
  EXPECT_EQ(parse(to_yaml(config), "emitted.yaml"), config);
}

// The config fuzzer's out-of-memory finding: yaml-cpp 0.7's YAML::LoadAll reads a ',' where a
// document's value should begin as an empty document without consuming it, again and again, and
// kept every one until memory ran out. It is a syntax error naming the line, and so is the same
// ',' after a first, sound document; a ',' inside a mapping was one already.
TEST(ConfigParseErrors, CommaWhereAValueShouldBeginIsASyntaxErrorNotEndlessDocuments) {
  const std::string unexpected = "YAML syntax error: unexpected ',' where a value should begin";
  expect_input_error([&] { parse(",", source); }, {source + ": line 1, column 1: " + unexpected});
  expect_input_error([&] { parse(",\n" + base, source); }, {source + ": line 1, column 1: " + unexpected});
  expect_input_error([&] { parse(base + "---\n  ,\n", source); },
                     {source + ": line 4, column 3: " + unexpected});
  expect_input_error([&] { parse(base + ",\n", source); },
                     {source + ": line 3, column 1: YAML syntax error"});
}

}  // namespace
}  // namespace phalanx::config
