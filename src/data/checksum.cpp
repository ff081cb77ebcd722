// XXH64, the checksum stored with every dataset (docs/DESIGN.md §4 "Integrity"): byte-wise FNV-1a is far
// too slow for datasets of many GB, while XXH64 runs at memory speed, is fully specified by the
// public xxHash definition, and gives the same value on every platform, so any tool can check it.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "phalanx/data/dataset.hpp"

namespace phalanx::data {
namespace {

constexpr std::uint64_t prime1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t prime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t prime3 = 0x165667B19E3779F9ULL;
constexpr std::uint64_t prime4 = 0x85EBCA77C2B2AE63ULL;
constexpr std::uint64_t prime5 = 0x27D4EB2F165667C5ULL;
constexpr std::size_t stripe_bytes = 32;

// The definition reads input words little-endian; memcpy keeps unaligned reads legal. (The GCC
// builtins stand in for std::byteswap, which is C++23.)
std::uint64_t read_little_endian_64(const unsigned char* bytes) {
  std::uint64_t value;
  std::memcpy(&value, bytes, sizeof value);
  if constexpr (std::endian::native == std::endian::big) value = __builtin_bswap64(value);
  return value;
}

std::uint32_t read_little_endian_32(const unsigned char* bytes) {
  std::uint32_t value;
  std::memcpy(&value, bytes, sizeof value);
  if constexpr (std::endian::native == std::endian::big) value = __builtin_bswap32(value);
  return value;
}

std::uint64_t mix_round(std::uint64_t accumulator, std::uint64_t input) {
  accumulator += input * prime2;
  accumulator = std::rotl(accumulator, 31);
  return accumulator * prime1;
}

std::uint64_t merge_round(std::uint64_t hash, std::uint64_t accumulator) {
  hash ^= mix_round(0, accumulator);
  return hash * prime1 + prime4;
}

void consume_stripe(std::uint64_t (&accumulators)[4], const unsigned char* stripe) {
  for (int lane = 0; lane < 4; ++lane)
    accumulators[lane] = mix_round(accumulators[lane], read_little_endian_64(stripe + 8 * lane));
}

std::string hexadecimal(std::uint64_t value) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int position = 15; position >= 0; --position, value >>= 4) text[position] = digits[value & 15];
  return text;
}

}  // namespace

Xxhash64Stream::Xxhash64Stream(std::uint64_t seed)
    : accumulators_{seed + prime1 + prime2, seed + prime2, seed, seed - prime1}, seed_(seed), buffer_{} {}

void Xxhash64Stream::update(const void* bytes, std::size_t size) {
  auto input = static_cast<const unsigned char*>(bytes);
  total_bytes_ += size;
  // Top up a partial stripe left by the previous call before hashing whole stripes in place.
  if (buffered_ > 0) {
    const std::size_t taken = std::min(size, stripe_bytes - buffered_);
    std::memcpy(buffer_ + buffered_, input, taken);
    buffered_ += taken;
    input += taken;
    size -= taken;
    if (buffered_ < stripe_bytes) return;
    consume_stripe(accumulators_, buffer_);
    buffered_ = 0;
  }
  for (; size >= stripe_bytes; input += stripe_bytes, size -= stripe_bytes)
    consume_stripe(accumulators_, input);
  std::memcpy(buffer_, input, size);
  buffered_ = size;
}

std::uint64_t Xxhash64Stream::digest() const {
  std::uint64_t hash;
  if (total_bytes_ >= stripe_bytes) {
    hash = std::rotl(accumulators_[0], 1) + std::rotl(accumulators_[1], 7) + std::rotl(accumulators_[2], 12) +
           std::rotl(accumulators_[3], 18);
    for (const std::uint64_t accumulator : accumulators_) hash = merge_round(hash, accumulator);
  } else {
    hash = seed_ + prime5;
  }
  hash += total_bytes_;

  const unsigned char* tail = buffer_;
  std::size_t remaining = buffered_;
  for (; remaining >= 8; tail += 8, remaining -= 8) {
    hash ^= mix_round(0, read_little_endian_64(tail));
    hash = std::rotl(hash, 27) * prime1 + prime4;
  }
  if (remaining >= 4) {
    hash ^= static_cast<std::uint64_t>(read_little_endian_32(tail)) * prime1;
    hash = std::rotl(hash, 23) * prime2 + prime3;
    tail += 4;
    remaining -= 4;
  }
  for (; remaining > 0; ++tail, --remaining) {
    hash ^= *tail * prime5;
    hash = std::rotl(hash, 11) * prime1;
  }
  // Final avalanche, so every input bit affects every output bit.
  hash ^= hash >> 33;
  hash *= prime2;
  hash ^= hash >> 29;
  hash *= prime3;
  hash ^= hash >> 32;
  return hash;
}

std::uint64_t xxhash64(const void* bytes, std::size_t size, std::uint64_t seed) {
  Xxhash64Stream stream(seed);
  stream.update(bytes, size);
  return stream.digest();
}

std::string format_checksum(std::uint64_t hash) {
  return std::string(checksum_algorithm) + ":" + hexadecimal(hash);
}

std::string checksum_text(const void* bytes, std::size_t size) {
  return format_checksum(xxhash64(bytes, size));
}

std::string checksum_text(const std::vector<std::int32_t>& labels) {
  if constexpr (std::endian::native == std::endian::little)
    return checksum_text(labels.data(), labels.size() * sizeof(std::int32_t));
  std::vector<std::uint32_t> little_endian(labels.size());
  for (std::size_t index = 0; index < labels.size(); ++index)
    little_endian[index] = __builtin_bswap32(static_cast<std::uint32_t>(labels[index]));
  return checksum_text(little_endian.data(), little_endian.size() * sizeof(std::uint32_t));
}

}  // namespace phalanx::data
