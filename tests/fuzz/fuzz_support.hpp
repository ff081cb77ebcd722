// What every fuzz target shares. The parsers under test take paths (as the command line hands
// them over), so each input is written to a scratch file first; and bad input may end in exactly
// one way, phalanx's InvalidInput error (exit status 2 in the CLI). Anything else — another
// exception, a crash, a sanitizer report, unbounded memory — is a finding.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "phalanx/core/error.hpp"

namespace phalanx::fuzz {

// A folder of this process's own under the temporary directory, emptied at exit.
inline const std::filesystem::path& scratch_directory() {
  static const std::filesystem::path path = [] {
    const char* base = std::getenv("TMPDIR");
    std::filesystem::path folder = std::filesystem::path(base ? base : "/tmp") /
                                   ("phalanx-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(folder);
    return folder;
  }();
  static const struct Cleanup {
    ~Cleanup() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } cleanup;
  return path;
}

inline std::string write_scratch_file(const std::string& name, std::string_view bytes) {
  const std::filesystem::path path = scratch_directory() / name;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!file) {
    std::fprintf(stderr, "fuzz: cannot write the scratch file %s\n", path.c_str());
    std::abort();
  }
  return path.string();
}

// A YAML text and its --set overrides in one input: the text up to the first NUL byte, then one
// override per line (empty lines skipped); no NUL: no overrides.
struct TextWithOverrides {
  std::string text;
  std::vector<std::string> overrides;
};

inline TextWithOverrides split_text_and_overrides(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t separator = input.find('\0');
  TextWithOverrides parts{input.substr(0, separator), {}};
  if (separator == std::string::npos) return parts;
  for (std::size_t begin = separator + 1; begin <= input.size();) {
    const std::size_t end = std::min(input.find('\n', begin), input.size());
    if (end > begin) parts.overrides.push_back(input.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

// Splits an input into `count` parts: each part but the last is a 4-byte little-endian length
// followed by that many bytes (clamped to what is left); the last part is the rest.
inline std::vector<std::string_view> split_framed(const std::uint8_t* data, std::size_t size, int count) {
  std::vector<std::string_view> parts;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  for (int part = 0; part + 1 < count; ++part) {
    std::uint32_t length = 0;
    for (int byte = 0; byte < 4 && byte < static_cast<int>(rest.size()); ++byte)
      length |= static_cast<std::uint32_t>(static_cast<unsigned char>(rest[byte])) << (8 * byte);
    rest.remove_prefix(std::min<std::size_t>(4, rest.size()));
    const std::size_t taken = std::min<std::size_t>(length, rest.size());
    parts.push_back(rest.substr(0, taken));
    rest.remove_prefix(taken);
  }
  parts.push_back(rest);
  return parts;
}

// Runs `body`; an InvalidInput error is the accepted answer to bad input, any other phalanx error
// is a finding (stops the fuzzer with its message). Other exceptions propagate and stop it too.
template <typename Body>
void accept_input_errors(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    if (error.kind() == ErrorKind::InvalidInput) {
      // PHALANX_FUZZ_VERBOSE=1 prints why an input was refused: a seed that is refused never
      // reaches the code behind the checks, so the corpora are kept valid with it.
      if (std::getenv("PHALANX_FUZZ_VERBOSE")) std::fprintf(stderr, "fuzz: input error: %s\n", error.what());
      return;
    }
    std::fprintf(stderr, "fuzz: not an input error: %s\n", error.what());
    std::abort();
  }
}

}  // namespace phalanx::fuzz
