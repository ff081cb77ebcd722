// CRC-32C (Castagnoli), the checksum of TFRecord files (TensorBoard event files), and its
// "masked" form that TFRecord stores so that a CRC of data containing CRCs stays well mixed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace phalanx {

std::uint32_t crc32c(const void* data, std::size_t bytes);
// ((crc >> 15) | (crc << 17)) + 0xa282ead8, as TFRecord writes it.
std::uint32_t masked_crc32c(const void* data, std::size_t bytes);

}  // namespace phalanx
