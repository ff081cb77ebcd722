// write_file_atomically: the file appears whole under its name or not at all. A refused output (an
// empty path, a path naming a folder, a folder in the way) is an InvalidInput error naming it that
// leaves nothing behind: no temporary file, and no folder made for it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx {
namespace {

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() / ("phalanx_atomic_file_" + std::to_string(::getpid()));
    std::filesystem::remove_all(folder_);
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  std::string at(const std::string& name) const { return (folder_ / name).string(); }
  // The names in the folder, sorted, one per line.
  std::string listing() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder_))
      names.push_back(std::filesystem::relative(entry.path(), folder_).string());
    std::sort(names.begin(), names.end());
    std::string text;
    for (const auto& name : names) text += name + "\n";
    return text;
  }
  // The message of the InvalidInput error `write` throws (a failure of the test otherwise).
  template <typename Write>
  std::string refusal(Write&& write) {
    try {
      write();
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::InvalidInput) << error.what();
      return error.what();
    }
    ADD_FAILURE() << "no error";
    return {};
  }

  std::filesystem::path folder_;
};

TEST_F(AtomicFileTest, WritesTheFileWholeMakingItsFolder) {
  write_file_atomically(at("a/b/out.txt"), "content");
  std::ifstream stream(at("a/b/out.txt"));
  std::stringstream text;
  text << stream.rdbuf();
  EXPECT_EQ(text.str(), "content");
  EXPECT_EQ(listing(), "a\na/b\na/b/out.txt\n");
  write_file_atomically(at("a/b/out.txt"), "again");  // replaces it
  std::ifstream again(at("a/b/out.txt"));
  std::stringstream replaced;
  replaced << again.rdbuf();
  EXPECT_EQ(replaced.str(), "again");
}

TEST_F(AtomicFileTest, RefusedOutputsLeaveNothingBehind) {
  EXPECT_NE(refusal([] { write_file_atomically("", "x"); }).find("the output file's path is empty"),
            std::string::npos);
  const std::string trailing = at("new/");
  EXPECT_NE(refusal([&] { write_file_atomically(trailing, "x"); }).find(trailing + ": names a folder"),
            std::string::npos);
  std::filesystem::create_directories(at("in-the-way"));
  EXPECT_NE(
      refusal([&] { write_file_atomically(at("in-the-way"), "x"); }).find(at("in-the-way") + ": cannot"),
      std::string::npos);
  // No folder "new", no temporary file beside "in-the-way".
  EXPECT_EQ(listing(), "in-the-way\n");
}

}  // namespace
}  // namespace phalanx
