#include <gtest/gtest.h>

#include <string>

#include "phalanx/core/utf8.hpp"

namespace phalanx {
namespace {

TEST(Utf8, WellFormedTextHasNoInvalidByte) {
  EXPECT_EQ(first_invalid_utf8(""), std::string::npos);
  EXPECT_EQ(first_invalid_utf8("t-shirt/top"), std::string::npos);
  EXPECT_EQ(first_invalid_utf8("caf\xC3\xA9"), std::string::npos);           // U+00E9
  EXPECT_EQ(first_invalid_utf8("\xE2\x82\xAC 5"), std::string::npos);        // U+20AC
  EXPECT_EQ(first_invalid_utf8("\xF0\x9F\x90\x88"), std::string::npos);      // U+1F408
  EXPECT_EQ(first_invalid_utf8("\xF4\x8F\xBF\xBF"), std::string::npos);      // U+10FFFF, the last
  EXPECT_EQ(first_invalid_utf8(std::string("a\0b", 3)), std::string::npos);  // NUL is a code point
}

TEST(Utf8, NamesTheFirstByteThatIsNot) {
  EXPECT_EQ(first_invalid_utf8("bad\xFF"), 3u);                // never a UTF-8 byte
  EXPECT_EQ(first_invalid_utf8("ab\xC3"), 2u);                 // cut at the end
  EXPECT_EQ(first_invalid_utf8("\xC3(x"), 0u);                 // continuation missing
  EXPECT_EQ(first_invalid_utf8("x\x80"), 1u);                  // a lone continuation byte
  EXPECT_EQ(first_invalid_utf8("\xC0\xAF"), 0u);               // overlong '/'
  EXPECT_EQ(first_invalid_utf8("\xE0\x80\xAF"), 0u);           // overlong, three bytes
  EXPECT_EQ(first_invalid_utf8("\xF0\x80\x80\xAF"), 0u);       // overlong, four bytes
  EXPECT_EQ(first_invalid_utf8("ok \xED\xA0\x80"), 3u);        // a UTF-16 surrogate, U+D800
  EXPECT_EQ(first_invalid_utf8("\xF4\x90\x80\x80"), 0u);       // past U+10FFFF
  EXPECT_EQ(first_invalid_utf8("\xF5\x80\x80\x80"), 0u);       // lead byte past any code point
  EXPECT_EQ(first_invalid_utf8("caf\xC3\xA9 \xE9t\xE9"), 6u);  // Latin-1 after good UTF-8
}

TEST(Utf8, AProblemIsSaidWithItsByteAndWellFormedTextHasNone) {
  EXPECT_EQ(utf8_problem("caf\xC3\xA9"), "");
  EXPECT_EQ(utf8_problem(""), "");
  EXPECT_EQ(utf8_problem("caf\xC3\xA9 \xE9t\xE9"), "not UTF-8 text (byte 6)");
}

}  // namespace
}  // namespace phalanx
