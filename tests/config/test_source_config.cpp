// Tests of data.source (a user's own HDF5 files read in place): parsing every key, FILE:DATASET,
// the rules between keys (path or source, test or test_fraction, val or val_fraction, split
// names), --set on nested keys, and parse(to_yaml(c)) == c with a source.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"
#include "support/test_support.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;

const std::string file = "configs/source.yaml";
const std::string model = "model: {preset: lenet5}\n";

TEST(SourceConfig, ParsesEveryKey) {
  const Config config = parse(model + R"(
data:
  source:
    train: {images: /shared/x_train.h5:/x, labels: /shared/y_train.h5:y}
    test:  {images: /shared/all.h5:/X_test, labels: /shared/all.h5:/y_test}
    val_fraction: 0.1
    split_seed: 5
    layout: nchw
    labels: one_hot
    classes: /shared/all.h5:/list_classes
    statistics: stats.txt
)",
                              file);
  const SourceConfig& source = config.data.source;
  EXPECT_TRUE(source.enabled());
  EXPECT_TRUE(config.data.path.empty());
  EXPECT_EQ(source.train.images.file, "/shared/x_train.h5");
  EXPECT_EQ(source.train.images.dataset, "/x");
  EXPECT_EQ(source.train.labels.dataset, "/y");  // a leading slash is added
  EXPECT_EQ(source.test.images.text(), "/shared/all.h5:/X_test");
  EXPECT_TRUE(source.val.empty());
  EXPECT_EQ(source.val_fraction, 0.1);
  EXPECT_EQ(source.split_seed, 5u);
  EXPECT_EQ(phalanx::config::name_of(source.layout), "nchw");
  EXPECT_EQ(phalanx::config::name_of(source.labels), "one_hot");
  EXPECT_EQ(source.classes_dataset.text(), "/shared/all.h5:/list_classes");
  EXPECT_EQ(source.statistics, "stats.txt");
}

TEST(SourceConfig, ClassesAsAListAndDefaults) {
  const Config config = parse(model + R"(
data:
  source:
    train: {images: a.h5:/x, labels: a.h5:/y}
    test_fraction: 0.2
    classes: [cat, dog]
)",
                              file);
  EXPECT_EQ(config.data.source.classes, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(phalanx::config::name_of(config.data.source.layout), "auto");
  EXPECT_EQ(phalanx::config::name_of(config.data.source.labels), "auto");
  EXPECT_TRUE(config.data.source.test.empty());
  EXPECT_EQ(config.data.source.test_fraction, 0.2);
}

TEST(SourceConfig, RoundTripsThroughToYaml) {
  for (const std::string& block : {std::string(R"(
    train: {images: a.h5:/x, labels: b.h5:/g/y}
    test: {images: "c:d.h5:/x", labels: c.h5:/y}
    val: {images: v.h5:/x, labels: v.h5:/y}
    layout: nhw
    classes: [a, "null", b]
)"),
                                   std::string(R"(
    train: {images: a.h5:/x, labels: a.h5:/y}
    test_fraction: 0.125
    val_fraction: 0.25
    split_seed: 18446744073709551615
    classes: names.h5:/classes
    statistics: /tmp/s.txt
)")}) {
    const Config config = parse(model + "data:\n  source:\n" + block, file);
    const std::string yaml = to_yaml(config);
    EXPECT_EQ(parse(yaml, "resolved.yaml"), config) << yaml;
  }
  // A config of a native file writes no source block.
  EXPECT_EQ(to_yaml(parse(model + "data: {path: d.h5}\n", file)).find("source"), std::string::npos);
}

TEST(SourceConfig, FileColonDatasetSplitsAtTheLastColon) {
  const Config config = parse(model +
                                  "data:\n  source:\n    train: {images: 'c:/dir/x.h5:/x', labels: "
                                  "a.h5:/y}\n    test_fraction: 0.1\n",
                              file);
  EXPECT_EQ(config.data.source.train.images.file, "c:/dir/x.h5");
  EXPECT_EQ(config.data.source.train.images.dataset, "/x");
}

TEST(SourceConfig, SetOverridesNestedKeys) {
  const Config config = parse(model +
                                  "data:\n  source:\n    train: {images: a.h5:/x, labels: a.h5:/y}\n    "
                                  "test_fraction: 0.1\n",
                              file, {"data.source.train.images=b.h5:/z", "data.source.layout=nhwc"});
  EXPECT_EQ(config.data.source.train.images.text(), "b.h5:/z");
  EXPECT_EQ(phalanx::config::name_of(config.data.source.layout), "nhwc");
}

TEST(SourceConfig, RulesBetweenKeysNameTheKey) {
  const auto fails = [&](const std::string& data, const std::vector<std::string>& fragments) {
    expect_input_error([&] { parse(model + "data:\n" + data, file); }, fragments);
  };
  fails("  path: d.h5\n  source:\n    train: {images: a.h5:/x, labels: a.h5:/y}\n    test_fraction: 0.1\n",
        {file, "data.path and data.source are both set"});
  fails("  source:\n    train: {images: a.h5:/x}\n    test_fraction: 0.1\n",
        {"data.source.train.labels is required"});
  fails("  source:\n    train: {images: a.h5:/x, labels: a.h5:/y}\n",
        {"data.source.test is required", "test_fraction"});
  fails(
      "  source:\n    train: {images: a.h5:/x, labels: a.h5:/y}\n    test: {images: a.h5:/t, labels: "
      "a.h5:/u}\n"
      "    test_fraction: 0.1\n",
      {"data.source.test_fraction", "use one of them"});
  fails(
      "  source:\n    train: {images: a.h5:/x, labels: a.h5:/y}\n    test_fraction: 0.3\n    val_fraction: "
      "0.3\n",
      {"more than half"});
  fails("  source:\n    train: {images: a.h5, labels: a.h5:/y}\n    test_fraction: 0.1\n",
        {"data.source.train.images", "FILE:DATASET"});
  fails(
      "  source:\n    train: {images: a.h5:/x, labels: a.h5:/y}\n    test_fraction: 0.1\n    layout: nwhc\n",
      {"data.source.layout", "did you mean 'nhwc'"});
  fails(
      "  source:\n    train: {images: a.h5:/x, labels: a.h5:/y}\n    test_fraction: 0.1\n    lables: index\n",
      {"data.source.lables", "did you mean 'data.source.labels'"});
  fails("  source:\n    train: {images: a.h5:/x, labels: a.h5:/y}\n    test_fraction: 0.1\n    classes: []\n",
        {"data.source.classes", "no class"});
  fails(
      "  source:\n    train: {images: a.h5:/x, labels: a.h5:/y}\n    test_fraction: 0.1\n    classes: [a, b, "
      "a]\n",
      {"data.source.classes[0] and [2] are both 'a'"});
  fails(
      "  source:\n    train: {images: a.h5:/x, labels: a.h5:/y}\n    test_fraction: 0.1\n  test_split: val\n",
      {"data.test_split", "only the splits train, test"});
  fails("  {}\n", {"data.path is required", "data.source"});
}

TEST(SourceConfig, AnImportsConfigIsCheckedAsTrainChecksIt) {
  // `phalanx data import-hdf5 FILE` reads data.source from a training config: a misspelt key, or
  // data.path beside it, was passed over there and refused only by train.
  phalanx::testing::ScratchDirectory scratch("source-config-import");
  const std::string source =
      "  source:\n    train: {images: a.h5:/x, labels: a.h5:/y}\n    test_fraction: 0.1\n";
  const auto write = [&](const std::string& text) {
    const std::string path = scratch.file("import.yaml");
    std::ofstream(path) << text;
    return path;
  };
  EXPECT_EQ(load_data_source(write("data:\n" + source)).train.images.dataset, "/x");
  const std::string misspelt = write("modle: {preset: lenet5}\ndata:\n" + source);
  expect_input_error([&] { load_data_source(misspelt); },
                     {misspelt, "unknown key 'modle'", "did you mean 'model'"});
  const std::string both = write("data:\n  path: d.h5\n" + source);
  expect_input_error([&] { load_data_source(both); }, {both, "data.path and data.source are both set"});
}

}  // namespace
}  // namespace phalanx::config
