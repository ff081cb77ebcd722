// ChannelHistogram: both moments from 256 exact counts per channel, so there is no rounding from
// summing millions of floats, and the variance comes from centred values rather than E[x^2] - E[x]^2.
#include "channel_histogram.hpp"

#include <cmath>

#include "phalanx/core/error.hpp"

namespace phalanx::data {

ChannelHistogram::ChannelHistogram(int channels) : histograms_(static_cast<std::size_t>(channels)) {
  PHALANX_CHECK(channels >= 1, "channels ", channels);
  for (auto& histogram : histograms_) histogram.fill(0);
}

void ChannelHistogram::add(const std::uint8_t* values, std::size_t pixels) {
  const std::size_t channels = histograms_.size();
  for (std::size_t index = 0; index < pixels; ++index)
    for (std::size_t channel = 0; channel < channels; ++channel) ++histograms_[channel][*values++];
}

std::vector<double> ChannelHistogram::counts() const {
  std::vector<double> counts;
  for (const auto& histogram : histograms_)
    for (const std::uint64_t count : histogram) counts.push_back(static_cast<double>(count));
  return counts;
}

void ChannelHistogram::set_counts(const std::vector<double>& counts) {
  PHALANX_CHECK(counts.size() == histograms_.size() * 256, counts.size(), " counts");
  for (std::size_t channel = 0; channel < histograms_.size(); ++channel)
    for (std::size_t value = 0; value < 256; ++value)
      histograms_[channel][value] = static_cast<std::uint64_t>(counts[channel * 256 + value]);
}

void ChannelHistogram::statistics(std::vector<float>& mean, std::vector<float>& standard_deviation) const {
  const std::size_t channels = histograms_.size();
  mean.assign(channels, 0.0f);
  standard_deviation.assign(channels, 0.0f);
  for (std::size_t channel = 0; channel < channels; ++channel) {
    const auto& histogram = histograms_[channel];
    std::uint64_t pixels = 0;
    for (const std::uint64_t count : histogram) pixels += count;
    PHALANX_CHECK(pixels > 0, "no pixels counted");
    double sum = 0.0;
    for (int value = 0; value < 256; ++value) sum += static_cast<double>(histogram[value]) * value;
    const double channel_mean = sum / static_cast<double>(pixels) / 255.0;
    double squares = 0.0;
    for (int value = 0; value < 256; ++value) {
      const double centred = value / 255.0 - channel_mean;
      squares += static_cast<double>(histogram[value]) * centred * centred;
    }
    mean[channel] = static_cast<float>(channel_mean);
    standard_deviation[channel] = static_cast<float>(std::sqrt(squares / static_cast<double>(pixels)));
  }
}

}  // namespace phalanx::data
