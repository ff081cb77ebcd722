// IndexPermutation: a keyed bijection on [0, size) evaluated one position at a time, so an epoch
// order over 10^10 samples costs a few words instead of 8 bytes per sample. A Feistel network
// on the smallest 2^k domain (k >= 2) that holds `size`, with cycle-walking back into range.
#pragma once

#include <array>
#include <cstdint>

namespace phalanx::data {

class IndexPermutation {
 public:
  static constexpr int rounds = 8;

  // `key` (64 bits from the run seed and the epoch) names the permutation; size >= 1.
  IndexPermutation(std::int64_t size, std::uint64_t key);

  std::int64_t size() const { return size_; }
  // The value at `position`, and the position holding `value`: (*this)(inverse(v)) == v.
  std::int64_t operator()(std::int64_t position) const;
  std::int64_t inverse(std::int64_t value) const;

 private:
  std::uint64_t encrypt(std::uint64_t value) const;
  std::uint64_t decrypt(std::uint64_t value) const;

  std::int64_t size_;
  int high_bits_ = 0, low_bits_ = 0;  // the two halves of the 2^k domain at the first round
  std::array<std::uint64_t, rounds> round_keys_{};
};

}  // namespace phalanx::data
