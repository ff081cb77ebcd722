// Per-channel mean and standard deviation of uint8 images through a 256-bin histogram per
// channel: exact whatever order the pixels arrive in, so statistics summed over slabs, over ranks
// or over a whole split in memory are the same floats. The importers (channel_statistics) and
// mapped sources (source_statistics) both use it, which is what makes a mapped source normalise
// bit for bit as its native import does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace phalanx::data {

class ChannelHistogram {
 public:
  explicit ChannelHistogram(int channels);

  // Counts `pixels` pixels of interleaved (HWC) uint8 values.
  void add(const std::uint8_t* values, std::size_t pixels);
  // The counts as doubles (exact below 2^53) and back, for summing histograms over ranks.
  std::vector<double> counts() const;
  void set_counts(const std::vector<double>& counts);

  // Mean and standard deviation per channel in [0,1] units (population, from centred values).
  void statistics(std::vector<float>& mean, std::vector<float>& standard_deviation) const;

 private:
  std::vector<std::array<std::uint64_t, 256>> histograms_;
};

}  // namespace phalanx::data
