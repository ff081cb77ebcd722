// Mean and std of a mapped source's training images, exact (ChannelHistogram) and shared by all
// ranks. The sidecar is a few lines of text with the floats in hexadecimal, so they read back
// bit for bit.
#include "phalanx/data/source_statistics.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "channel_histogram.hpp"
#include "mapped_source_cache.hpp"
#include "mapped_split_reader.hpp"
#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::data {
namespace {

constexpr const char* sidecar_format = "phalanx-source-statistics 1";
// Samples read per slab while histogramming: bounded memory, and whole chunk bands for most files.
constexpr std::int64_t slab_bytes = std::int64_t{64} << 20;

std::string hex_floats(const std::vector<float>& values) {
  std::string text;
  for (const float value : values) {
    char number[48];
    std::snprintf(number, sizeof number, "%a", static_cast<double>(value));
    if (!text.empty()) text += ' ';
    text += number;
  }
  return text;
}

// The stored statistics, when the sidecar exists, is intact and describes this very source.
bool read_sidecar(const std::string& path, const std::string& fingerprint, std::size_t channels,
                  std::vector<float>& mean, std::vector<float>& standard_deviation) {
  std::ifstream file(path);
  if (!file) return false;
  std::string format, stored_fingerprint, mean_line, std_line;
  if (!std::getline(file, format) || format != sidecar_format) return false;
  if (!std::getline(file, stored_fingerprint) || stored_fingerprint != "fingerprint " + fingerprint)
    return false;
  // Each value whole, finite and a statistic of pixels in [0, 1] (a standard deviation in (0, 0.5]):
  // a sidecar edited or damaged otherwise is not this source's and is computed afresh.
  const auto parse = [channels](const std::string& line, const char* label, std::vector<float>& values) {
    std::istringstream words(line);
    std::string word;
    if (!(words >> word) || word != label) return false;
    const bool deviation = std::string(label) == "std";
    values.clear();
    while (words >> word) {
      char* end = nullptr;
      const double value = std::strtod(word.c_str(), &end);
      const bool plausible = deviation ? value > 0 && value <= 0.5 : value >= 0 && value <= 1;
      if (end != word.c_str() + word.size() || !std::isfinite(value) || !plausible) return false;
      values.push_back(static_cast<float>(value));
    }
    return values.size() == channels;
  };
  return std::getline(file, mean_line) && std::getline(file, std_line) && parse(mean_line, "mean", mean) &&
         parse(std_line, "std", standard_deviation);
}

std::string sidecar_text(const std::string& fingerprint, const DatasetInfo& info) {
  std::ostringstream text;
  text << sidecar_format << "\nfingerprint " << fingerprint << "\nmean " << hex_floats(info.mean) << "\nstd "
       << hex_floats(info.standard_deviation) << "\n";
  return text.str();
}

// This rank's share of the training images, histogrammed in slabs aligned to chunk bands.
std::vector<double> histogram_share(const MappedSplitReader& reader, const comm::Communicator& communicator) {
  const auto& split = reader.split();
  ChannelHistogram histogram(split.channels);
  const std::int64_t chunk = reader.chunk_samples();
  const std::int64_t chunks = (split.count + chunk - 1) / chunk;
  const std::int64_t begin =
      std::min(split.count, chunks * communicator.rank() / communicator.size() * chunk);
  const std::int64_t end =
      std::min(split.count, chunks * (communicator.rank() + 1) / communicator.size() * chunk);
  const std::int64_t slab =
      chunk * std::max<std::int64_t>(1, slab_bytes / std::max<std::int64_t>(1, chunk * reader.image_bytes()));
  std::vector<std::uint8_t> images;
  std::vector<std::int32_t> labels;
  for (std::int64_t first = begin; first < end; first += slab) {
    const std::int64_t last = std::min(end, first + slab);
    images.resize(static_cast<std::size_t>((last - first) * reader.image_bytes()));
    labels.resize(static_cast<std::size_t>(last - first));
    reader.read(first, last, images.data(), labels.data());
    histogram.add(images.data(), images.size() / static_cast<std::size_t>(split.channels));
  }
  return histogram.counts();
}

}  // namespace

std::string statistics_sidecar_path(const config::DataConfig& data, const std::string& run_directory) {
  if (!data.source.statistics.empty()) return data.source.statistics;
  return (std::filesystem::path(run_directory) / statistics_sidecar_name).string();
}

DatasetInfo describe_dataset(const config::DataConfig& data, const std::string& run_directory,
                             const comm::Communicator& communicator) {
  if (!data.source.enabled()) return read_dataset_info(data.path);
  const auto source = open_mapped_source(data.source);
  DatasetInfo info = source->info();
  const auto* train = info.find_split("train");
  PHALANX_CHECK(train != nullptr, "a mapped source without train");
  const auto channels = static_cast<std::size_t>(train->channels);
  const std::string sidecar = statistics_sidecar_path(data, run_directory);

  // Every rank reads the sidecar itself (it is tiny) and the ranks agree on whether all found it.
  double found =
      read_sidecar(sidecar, source->fingerprint(), channels, info.mean, info.standard_deviation) ? 1 : 0;
  double missing = 1 - found;
  communicator.allreduce_max(&missing, 1);
  if (missing == 0) return info;

  // A failure on one rank must fail all of them, not leave the others in the sum below.
  std::vector<double> counts(channels * 256, 0.0);
  std::string failure_message;
  try {
    counts = histogram_share(MappedSplitReader(source, "train"), communicator);
  } catch (const std::exception& error) {
    failure_message = error.what();
  }
  double failed_rank = failure_message.empty() ? -1.0 : communicator.rank();
  communicator.allreduce_max(&failed_rank, 1);
  if (failed_rank >= 0) {
    communicator.broadcast_string(failure_message, static_cast<int>(failed_rank));
    throw_input_error("computing the training images' mean and std: " + failure_message);
  }
  communicator.allreduce_sum(counts.data(), static_cast<std::int64_t>(counts.size()));
  ChannelHistogram histogram(train->channels);
  histogram.set_counts(counts);
  histogram.statistics(info.mean, info.standard_deviation);
  for (std::size_t channel = 0; channel < channels; ++channel)
    PHALANX_REQUIRE_INPUT(info.standard_deviation[channel] > 0.0f, source->split("train").images.text(),
                          " (data.source.train.images): channel ", channel,
                          " has the same value in every pixel of the training images (std = 0): nothing to "
                          "normalise");

  // A path the user chose is written now and must work. The run directory's file waits for
  // write_statistics_sidecar: the run may still be refused, and a refused run leaves no folder.
  if (communicator.rank() == 0 && !data.source.statistics.empty()) {
    try {
      write_file_atomically(sidecar, sidecar_text(source->fingerprint(), info));
    } catch (const Error& error) {
      throw_input_error("data.source.statistics: " + sidecar + ": cannot be written (" + error.what() + ")");
    }
  }
  return info;
}

void write_statistics_sidecar(const config::DataConfig& data, const std::string& run_directory,
                              const DatasetInfo& info) {
  if (!data.source.enabled() || !data.source.statistics.empty()) return;
  const std::string fingerprint = open_mapped_source(data.source)->fingerprint();
  const std::string sidecar = statistics_sidecar_path(data, run_directory);
  std::vector<float> mean, standard_deviation;
  if (read_sidecar(sidecar, fingerprint, info.mean.size(), mean, standard_deviation) && mean == info.mean &&
      standard_deviation == info.standard_deviation)
    return;
  // A cache: a run folder that cannot take it costs a recomputation next time, nothing more.
  try {
    write_file_atomically(sidecar, sidecar_text(fingerprint, info));
  } catch (const Error&) {
  }
}

}  // namespace phalanx::data
