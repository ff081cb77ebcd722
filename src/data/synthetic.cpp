// Synthetic datasets: each class has its own random mean image and every sample is that image plus
// noise, so a network can learn it. They let tests, benchmarks and demos run without downloads,
// and every byte is a pure function of the seed (Philox streams), so two runs write equal files.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/core/usable_memory.hpp"
#include "phalanx/data/importers.hpp"

namespace phalanx::data {
namespace {

// Distinct stream ids keep the class patterns, the train split and the test split independent.
constexpr std::uint64_t pattern_stream = 1, train_stream = 2, test_stream = 3;
// Patterns sit in [48, 208] and noise reaches +-64: classes overlap a little but stay separable.
constexpr float pattern_low = 48.0f, pattern_high = 208.0f, noise_amplitude = 64.0f;

Split synthesize_split(const std::string& name, std::int64_t count, const SynthOptions& options,
                       const std::vector<std::vector<float>>& patterns, std::uint64_t stream) {
  Split split;
  split.name = name;
  split.count = count;
  split.height = options.height;
  split.width = options.width;
  split.channels = options.channels;
  split.images.resize(static_cast<std::size_t>(count * split.image_bytes()));
  split.labels.resize(static_cast<std::size_t>(count));
  RandomStream random(options.seed, stream);
  const auto image_bytes = static_cast<std::size_t>(split.image_bytes());
  for (std::int64_t sample = 0; sample < count; ++sample) {
    const auto label =
        static_cast<std::int32_t>(random.next_below(static_cast<std::uint64_t>(options.classes)));
    split.labels[static_cast<std::size_t>(sample)] = label;
    const std::vector<float>& pattern = patterns[static_cast<std::size_t>(label)];
    std::uint8_t* image = split.images.data() + static_cast<std::size_t>(sample) * image_bytes;
    for (std::size_t index = 0; index < image_bytes; ++index) {
      // The sum of two uniforms is triangular: most noise is small, like real sensor noise.
      const float noise = (random.next_uniform() + random.next_uniform() - 1.0f) * noise_amplitude;
      image[index] = static_cast<std::uint8_t>(std::clamp(std::lround(pattern[index] + noise), 0L, 255L));
    }
  }
  return split;
}

}  // namespace

void synthesize(const std::string& output_path, const SynthOptions& options,
                const WriteOptions& write_options) {
  const auto require = [&](bool condition, const std::string& what) {
    if (!condition) throw_input_error(output_path + ": synthetic dataset: " + what);
  };
  require(options.train_count >= 1,
          "train count " + std::to_string(options.train_count) + " must be at least 1");
  require(options.test_count >= 1,
          "test count " + std::to_string(options.test_count) + " must be at least 1");
  require(options.height >= 1 && options.width >= 1 && options.channels >= 1,
          "image shape " + std::to_string(options.height) + "x" + std::to_string(options.width) + "x" +
              std::to_string(options.channels) + " must have every side at least 1");
  require(options.classes >= 2, "class count " + std::to_string(options.classes) + " must be at least 2");
  // Both splits and a pattern per class are held in memory while the file is written; the sizes are
  // checked in 64 bits against what this process may use before anything is allocated.
  constexpr std::int64_t largest_side = 65536, most_classes = 1 << 20;
  require(options.height <= largest_side && options.width <= largest_side && options.channels <= largest_side,
          "image shape " + std::to_string(options.height) + "x" + std::to_string(options.width) + "x" +
              std::to_string(options.channels) + " has a side over " + std::to_string(largest_side));
  require(options.classes <= most_classes,
          "class count " + std::to_string(options.classes) + " is over " + std::to_string(most_classes));
  const std::int64_t sample_bytes = std::int64_t{options.height} * options.width * options.channels;
  const double needed =
      (static_cast<double>(options.train_count) + static_cast<double>(options.test_count)) *
          static_cast<double>(sample_bytes + 4) +
      static_cast<double>(options.classes) * static_cast<double>(sample_bytes) * sizeof(float);
  const double usable = static_cast<double>(usable_memory_bytes().value_or(std::uint64_t{1} << 40));
  const auto gigabytes = [](double bytes) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f GB", bytes / 1e9);
    return std::string(text);
  };
  require(needed <= usable, "--train " + std::to_string(options.train_count) + " and --test " +
                                std::to_string(options.test_count) + " samples of " +
                                std::to_string(options.height) + "x" + std::to_string(options.width) + "x" +
                                std::to_string(options.channels) + " and " + std::to_string(options.classes) +
                                " class patterns need " + gigabytes(needed) + " in memory, more than the " +
                                gigabytes(usable) + " this process may use");

  const auto image_bytes = static_cast<std::size_t>(options.height) * options.width * options.channels;
  std::vector<std::vector<float>> patterns(static_cast<std::size_t>(options.classes),
                                           std::vector<float>(image_bytes));
  RandomStream pattern_random(options.seed, pattern_stream);
  for (auto& pattern : patterns)
    for (float& value : pattern) value = pattern_random.next_uniform(pattern_low, pattern_high);

  const Split train = synthesize_split("train", options.train_count, options, patterns, train_stream);
  const Split test = synthesize_split("test", options.test_count, options, patterns, test_stream);
  std::vector<std::string> classes;
  for (int index = 0; index < options.classes; ++index) classes.push_back("class" + std::to_string(index));
  write_dataset(output_path, classes, {&train, &test}, write_options);
}

}  // namespace phalanx::data
