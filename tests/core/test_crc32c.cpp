// CRC-32C against the published check value and TFRecord's masking.
#include <gtest/gtest.h>

#include <string>

#include "phalanx/core/crc32c.hpp"

namespace phalanx {
namespace {

TEST(Crc32c, MatchesTheStandardCheckValue) {
  // The CRC catalogue's check value of CRC-32/ISCSI (Castagnoli) for "123456789".
  const std::string text = "123456789";
  EXPECT_EQ(crc32c(text.data(), text.size()), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  // RFC 3720 B.4: 32 bytes of zeros.
  const std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
}

TEST(Crc32c, MaskRotatesAndAddsTheTfRecordConstant) {
  const std::string text = "123456789";
  const std::uint32_t crc = 0xE3069283u;
  EXPECT_EQ(masked_crc32c(text.data(), text.size()), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

}  // namespace
}  // namespace phalanx
