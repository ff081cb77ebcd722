// write_file_atomically: the file appears whole under its name or not at all. A refused output (an
// empty path, a path naming a folder, a folder in the way) is an InvalidInput error naming it that
// leaves nothing behind: no temporary file, and no folder made for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "support/test_support.hpp"

namespace phalanx {
namespace {

class AtomicFileTest : public ::testing::Test {
 protected:
  std::string at(const std::string& name) const { return scratch_.file(name); }
  // The names in the folder, sorted, one per line.
  std::string listing() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(scratch_.path()))
      names.push_back(std::filesystem::relative(entry.path(), scratch_.path()).string());
    std::sort(names.begin(), names.end());
    std::string text;
    for (const auto& name : names) text += name + "\n";
    return text;
  }

 private:
  testing::ScratchDirectory scratch_{"atomic_file"};
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
  EXPECT_NE(testing::input_error_message([] {
              write_file_atomically("", "x");
            }).find("the output file's path is empty"),
            std::string::npos);
  const std::string trailing = at("new/");
  EXPECT_NE(testing::input_error_message([&] {
              write_file_atomically(trailing, "x");
            }).find(trailing + ": names a folder"),
            std::string::npos);
  std::filesystem::create_directories(at("in-the-way"));
  EXPECT_NE(testing::input_error_message([&] {
              write_file_atomically(at("in-the-way"), "x");
            }).find(at("in-the-way") + ": cannot"),
            std::string::npos);
  // No folder "new", no temporary file beside "in-the-way".
  EXPECT_EQ(listing(), "in-the-way\n");
}

}  // namespace
}  // namespace phalanx
