// Helpers shared by the unit tests: scratch folders, whole files as bytes, the message of an input
// error and small numeric comparisons.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "phalanx/core/error.hpp"

namespace phalanx::testing {

// A fresh empty folder under the build tree, removed at destruction.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(const std::string& name);
  ~ScratchDirectory();
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A file's bytes, all of them ("" for a file that cannot be read).
std::string file_bytes(const std::string& path);

// Writes `bytes` as the whole of the file at `path` (created or truncated), as a damaged or cut
// file is made from a good one's bytes.
void write_bytes(const std::string& path, const std::string& bytes);

// Runs `call`, expects phalanx::Error of kind InvalidInput (exit status 2), and returns its message.
template <typename Call>
std::string input_error_message(Call&& call) {
  try {
    call();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidInput) << error.what();
    EXPECT_EQ(error.exit_status(), 2);
    return error.what();
  }
  ADD_FAILURE() << "expected an input error, but the call succeeded";
  return {};
}

// Largest |a-b| / max(1, |a|, |b|) over two equally long arrays.
double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace phalanx::testing
