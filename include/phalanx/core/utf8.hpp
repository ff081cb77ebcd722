// Well-formed UTF-8. Text phalanx takes in (configs, class names, tensor names) goes out again in
// YAML, JSON and HTML, which hold UTF-8 only: other bytes are refused where they come in, naming
// the file, rather than met later as an exception while a report or summary is written.
#pragma once

#include <cstddef>
#include <string>

namespace phalanx {

// The offset of the first byte of `text` that is not well-formed UTF-8 (an overlong form, a
// UTF-16 surrogate, a code point past U+10FFFF, a cut sequence), or std::string::npos.
std::size_t first_invalid_utf8(const std::string& text);
// "" for well-formed UTF-8; else what a refusal says of it: "not UTF-8 text (byte N)".
std::string utf8_problem(const std::string& text);

}  // namespace phalanx
