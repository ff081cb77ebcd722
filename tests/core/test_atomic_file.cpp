// write_file_atomically: the file appears whole under its name or not at all. A refused output (an
// empty path, a path naming a folder, a folder in the way) is an InvalidInput error naming it that
// leaves nothing behind: no temporary file, and no folder made for it.
#include <gtest/gtest.h>
#include <sys/stat.h>

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
      names.push_back(entry.path().lexically_relative(scratch_.path()).string());  // a link by its own name
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
            }).find(at("in-the-way") + ": exists and is not a regular file (a folder)"),
            std::string::npos);
  // No folder "new", no temporary file beside "in-the-way".
  EXPECT_EQ(listing(), "in-the-way\n");
}

TEST_F(AtomicFileTest, RefusesToReplaceWhatIsNotARegularFile) {
  // The rename would replace it: as root, an import to /dev/null made it a regular file.
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0600), 0);
  EXPECT_NE(testing::input_error_message([&] {
              write_file_atomically(at("fifo"), "x");
            }).find(at("fifo") + ": exists and is not a regular file (a device, FIFO or socket)"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::is_fifo(at("fifo")));
  write_file_atomically(at("target"), "kept");
  std::filesystem::create_symlink(at("target"), at("link"));
  EXPECT_NE(testing::input_error_message([&] {
              write_file_atomically(at("link"), "x");
            }).find(at("link") + ": exists and is not a regular file (a symbolic link)"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::is_symlink(at("link")));
  EXPECT_EQ(listing(), "fifo\nlink\ntarget\n");
}

TEST_F(AtomicFileTest, AnOutputNeverCommittedTakesTheFoldersItMadeAlong) {
  std::filesystem::create_directories(at("kept"));
  {
    AtomicFile file(at("kept/made/deeper/out.h5"));
    std::ofstream(file.temporary_path()) << "half";
    // A refusal after the folders were made (an import's bad sample): no commit.
  }
  EXPECT_EQ(listing(), "kept\n");
  // A folder someone else wrote into meanwhile stays, with what is in it.
  {
    AtomicFile file(at("kept/shared/out.h5"));
    std::ofstream(at("kept/shared/other.txt")) << "theirs";
  }
  EXPECT_EQ(listing(), "kept\nkept/shared\nkept/shared/other.txt\n");
}

}  // namespace
}  // namespace phalanx
