#include "phalanx/core/utf8.hpp"

namespace phalanx {

std::size_t first_invalid_utf8(const std::string& text) {
  std::size_t index = 0;
  while (index < text.size()) {
    const auto lead = static_cast<unsigned char>(text[index]);
    const std::size_t length = lead < 0x80   ? 1
                               : lead < 0xC2 ? 0
                               : lead < 0xE0 ? 2
                               : lead < 0xF0 ? 3
                               : lead < 0xF5 ? 4
                                             : 0;
    if (length == 0 || index + length > text.size()) return index;
    for (std::size_t next = 1; next < length; ++next)
      if ((static_cast<unsigned char>(text[index + next]) & 0xC0) != 0x80) return index;
    const auto second = length > 1 ? static_cast<unsigned char>(text[index + 1]) : 0;
    // Overlong forms, UTF-16 surrogates and code points above U+10FFFF.
    if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second >= 0xA0) ||
        (lead == 0xF0 && second < 0x90) || (lead == 0xF4 && second >= 0x90))
      return index;
    index += length;
  }
  return std::string::npos;
}

std::string utf8_problem(const std::string& text) {
  const std::size_t offset = first_invalid_utf8(text);
  if (offset == std::string::npos) return "";
  return "not UTF-8 text (byte " + std::to_string(offset) + ")";
}

}  // namespace phalanx
