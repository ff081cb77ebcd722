// Tests of config::load: reading from disk, and the errors for a missing file, a folder,
// an empty file and a file with a YAML syntax error, each naming the path.
#include <gtest/gtest.h>

#include <fstream>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"
#include "support/test_support.hpp"

namespace phalanx::config {
namespace {

using phalanx::testing::expect_input_error;
using phalanx::testing::ScratchDirectory;

void write_file(const std::string& path, const std::string& text) {
  std::ofstream stream(path, std::ios::binary);
  stream << text;
}

TEST(ConfigLoad, ReadsTheFileAndAppliesOverrides) {
  const ScratchDirectory scratch("config-load");
  const std::string path = scratch.file("run.yaml");
  write_file(path, "model: {preset: lenet5}\ndata: {path: d.h5}\ntrain: {epochs: 4}\n");
  const Config config = load(path, {"train.batch_size=32"});
  EXPECT_EQ(config.model.preset, "lenet5");
  EXPECT_EQ(config.train.epochs, 4);
  EXPECT_EQ(config.train.batch_size, 32);
  EXPECT_EQ(config,
            parse("model: {preset: lenet5}\ndata: {path: d.h5}\ntrain: {epochs: 4, batch_size: 32}\n", "x"));
}

TEST(ConfigLoad, MissingFileNamesThePath) {
  const ScratchDirectory scratch("config-missing");
  const std::string path = scratch.file("absent.yaml");
  expect_input_error([&] { load(path); }, {path + ": cannot read the config file: no such file"});
}

TEST(ConfigLoad, FolderIsNotAConfig) {
  const ScratchDirectory scratch("config-folder");
  const std::string path = scratch.path().string();
  expect_input_error([&] { load(path); }, {path + ": cannot read the config file: it is a directory"});
}

TEST(ConfigLoad, EmptyFile) {
  const ScratchDirectory scratch("config-empty");
  const std::string path = scratch.file("empty.yaml");
  write_file(path, "");
  expect_input_error([&] { load(path); }, {path + ": the configuration is empty"});
}

TEST(ConfigLoad, SyntaxErrorNamesFileAndLine) {
  const ScratchDirectory scratch("config-syntax");
  const std::string path = scratch.file("broken.yaml");
  write_file(path, "model: {preset: lenet5}\ndata:\n  path: d.h5\n   train_split: x\n");
  expect_input_error([&] { load(path); }, {path + ": line 4, column", "YAML syntax error"});
}

TEST(ConfigLoad, ErrorsInTheFileNameItsPath) {
  const ScratchDirectory scratch("config-bad-key");
  const std::string path = scratch.file("bad.yaml");
  write_file(path, "model: {preset: lenet5}\ndata: {path: d.h5}\ntrain: {batchsize: 8}\n");
  expect_input_error([&] { load(path); },
                     {path + ": unknown key 'train.batchsize' (did you mean 'train.batch_size'?)"});
}

}  // namespace
}  // namespace phalanx::config
