// What this binary was built from: phalanx's version, the source tree's git commit, the build type
// and the compiler. The definition is generated at every build (src/core/write_build_stamp.cmake), so
// `phalanx --version` and every run's summary.json name the exact commit a user runs.
#pragma once

#include <string>

namespace phalanx {

struct BuildStamp {
  std::string version;     // the project's version, "0.1.0"
  std::string git_commit;  // short hash; "-modified" when tracked files differed; "unknown" outside git
  std::string build_type;  // CMAKE_BUILD_TYPE: Release, Debug, RelWithDebInfo
  std::string compiler;    // "GNU 12.2.0"
};

const BuildStamp& build_stamp();

}  // namespace phalanx
