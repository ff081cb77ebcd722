// Scratch folders live in the build tree so parallel ctest runs of different binaries never
// share one; the process id keeps reruns apart.
#include "support/test_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

namespace phalanx::testing {

ScratchDirectory::ScratchDirectory(const std::string& name) {
  path_ = std::filesystem::path(PHALANX_BINARY_DIR) / "test-scratch" /
          (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string file_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double scale = std::max({1.0, std::fabs(double(a[i])), std::fabs(double(b[i]))});
    worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])) / scale);
  }
  return worst;
}

}  // namespace phalanx::testing
