# Writes the build stamp (phalanx's version, the git commit of the source tree, the build type and
# the compiler) as a C++ source, at every build: a commit made since the last configure still shows.
# The file is rewritten only when its text changes, so an unchanged tree recompiles nothing.
# Called as: cmake -DSOURCE_DIR=... -DOUTPUT=... -DVERSION=... -DBUILD_TYPE=... -DCOMPILER=... -P this
set(commit "unknown")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE head RESULT_VARIABLE head_status OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(head_status EQUAL 0 AND head)
    set(commit "${head}")
    # Tracked files edited since that commit: the binary is not exactly that commit.
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE changes_status ERROR_QUIET)
    if(changes_status EQUAL 0 AND NOT changes STREQUAL "")
      # And which edits: two builds of different edits on one commit are different programs (a
      # joining sweep job compares the stamps), so the stamp carries a digest of the diff.
      execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" diff HEAD --no-ext-diff
                      OUTPUT_VARIABLE difference RESULT_VARIABLE difference_status ERROR_QUIET)
      string(APPEND commit "-modified")
      if(difference_status EQUAL 0)
        string(SHA256 digest "${difference}")
        string(SUBSTRING "${digest}" 0 8 digest)
        string(APPEND commit "-${digest}")
      endif()
    endif()
  endif()
endif()
set(text "// Generated at build time by src/core/write_build_stamp.cmake; do not edit.
#include \"phalanx/core/build_stamp.hpp\"

namespace phalanx {

const BuildStamp& build_stamp() {
  static const BuildStamp stamp{\"${VERSION}\", \"${commit}\", \"${BUILD_TYPE}\", \"${COMPILER}\"};
  return stamp;
}

}  // namespace phalanx
")
set(previous "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" previous)
endif()
if(NOT previous STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
