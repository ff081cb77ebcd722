// CRC-32C with a byte-wise table (reflected polynomial 0x82F63B78). Event files are small and
// written a few times per epoch, so a table is plenty; no SSE4.2 instruction needed.
#include "phalanx/core/crc32c.hpp"

#include <array>

namespace phalanx {
namespace {

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t index = 0; index < 256; ++index) {
    std::uint32_t crc = index;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82F63B78u : 0u);
    table[index] = crc;
  }
  return table;
}

constexpr std::array<std::uint32_t, 256> table = make_table();

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t bytes) {
  const auto* byte = static_cast<const std::uint8_t*>(data);
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t index = 0; index < bytes; ++index) crc = (crc >> 8) ^ table[(crc ^ byte[index]) & 0xFFu];
  return crc ^ 0xFFFFFFFFu;
}

std::uint32_t masked_crc32c(const void* data, std::size_t bytes) {
  const std::uint32_t crc = crc32c(data, bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

}  // namespace phalanx
