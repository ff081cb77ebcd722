// Helpers shared by the unit tests: scratch folders, whole files as bytes and small numeric
// comparisons.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

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

// Largest |a-b| / max(1, |a|, |b|) over two equally long arrays.
double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace phalanx::testing
