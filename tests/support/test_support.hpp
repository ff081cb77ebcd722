// Helpers shared by the unit tests: scratch folders and small numeric comparisons.
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

// Largest |a-b| / max(1, |a|, |b|) over two equally long arrays.
double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace phalanx::testing
