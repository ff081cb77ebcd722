// IndexPermutation: an unbalanced alternating Feistel network on 2^k values. A value is split
// into a high and a low part; each round moves the low part up and replaces the high part, xored
// with a keyed 64-bit mix of the low part, into the low bits. Every round is invertible whatever
// the mixing function, so the whole is a bijection on [0, 2^k); values that land in
// [size, 2^k) are encrypted again (cycle-walking), which stays a bijection on [0, size) and
// needs fewer than two rounds of walking on average since 2^k < 2 * size.
#include "phalanx/data/index_permutation.hpp"

#include <algorithm>
#include <bit>
#include <utility>

#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::data {
namespace {
constexpr std::uint64_t key_stream = 0x46454953544cull;  // "FEISTL"

std::uint64_t mask(int bits) {
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

// The SplitMix64 finaliser of (half + key): every output bit depends on every input bit.
std::uint64_t mix(std::uint64_t half, std::uint64_t key) {
  std::uint64_t value = half + key;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}
}  // namespace

IndexPermutation::IndexPermutation(std::int64_t size, std::uint64_t key) : size_(size) {
  PHALANX_CHECK(size >= 1, "permutation of ", size, " values");
  // At least 2 bits: on a 1-bit domain one half would be empty and the network the identity.
  const int bits = std::max(2, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(size - 1))));
  low_bits_ = bits / 2;
  high_bits_ = bits - low_bits_;
  RandomStream random(key, key_stream);
  for (auto& round_key : round_keys_) {
    const std::uint64_t high = random.next_u32();
    round_key = high << 32 | random.next_u32();
  }
}

std::uint64_t IndexPermutation::encrypt(std::uint64_t value) const {
  int high_bits = high_bits_, low_bits = low_bits_;
  for (const std::uint64_t round_key : round_keys_) {
    const std::uint64_t high = value >> low_bits, low = value & mask(low_bits);
    value = low << high_bits | ((high ^ mix(low, round_key)) & mask(high_bits));
    std::swap(high_bits, low_bits);
  }
  return value;
}

std::uint64_t IndexPermutation::decrypt(std::uint64_t value) const {
  // Before round i the halves are (high_bits_, low_bits_) for even i and swapped for odd i.
  for (int round = rounds - 1; round >= 0; --round) {
    const int high_bits = round % 2 == 0 ? high_bits_ : low_bits_;
    const int low_bits = round % 2 == 0 ? low_bits_ : high_bits_;
    const std::uint64_t low = value >> high_bits;
    const std::uint64_t high =
        ((value & mask(high_bits)) ^ mix(low, round_keys_[static_cast<std::size_t>(round)])) &
        mask(high_bits);
    value = high << low_bits | low;
  }
  return value;
}

std::int64_t IndexPermutation::operator()(std::int64_t position) const {
  PHALANX_CHECK(position >= 0 && position < size_, "position ", position, " of ", size_);
  auto value = static_cast<std::uint64_t>(position);
  do value = encrypt(value);
  while (value >= static_cast<std::uint64_t>(size_));
  return static_cast<std::int64_t>(value);
}

std::int64_t IndexPermutation::inverse(std::int64_t value) const {
  PHALANX_CHECK(value >= 0 && value < size_, "value ", value, " of ", size_);
  auto position = static_cast<std::uint64_t>(value);
  do position = decrypt(position);
  while (position >= static_cast<std::uint64_t>(size_));
  return static_cast<std::int64_t>(position);
}

}  // namespace phalanx::data
