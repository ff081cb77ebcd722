#include "phalanx/core/distinct_files.hpp"

#include <filesystem>
#include <system_error>

#include "phalanx/core/error.hpp"

namespace phalanx {

void require_another_file(const std::string& input, const std::string& output, const char* what) {
  std::error_code error;  // either missing: not the same file
  PHALANX_REQUIRE_INPUT(!std::filesystem::equivalent(input, output, error), output, ": is the ", what,
                        " being read (", input, "): write the output to another file");
}

}  // namespace phalanx
