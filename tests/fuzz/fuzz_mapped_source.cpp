// Fuzz target: the data.source mapping. Input: the bytes of a user's HDF5 file, mapped as
// train /x_train + /y_train and test /x_test + /y_test with layout and label encoding detected
// ("auto"), as a config naming only the datasets would map it; then a batch of every split is
// read and converted as the loader reads it.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "phalanx/config/config.hpp"
#include "mapped_source.hpp"
#include "mapped_split_reader.hpp"

namespace {

// Larger samples are skipped by this harness (its own buffers), not by the reader.
constexpr std::int64_t largest_batch_bytes = std::int64_t{64} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = phalanx::fuzz::write_scratch_file(
      "source.h5", std::string_view(reinterpret_cast<const char*>(data), size));
  phalanx::config::SourceConfig source;
  source.train = {{path, "/x_train"}, {path, "/y_train"}};
  source.test = {{path, "/x_test"}, {path, "/y_test"}};
  phalanx::fuzz::accept_input_errors([&] {
    const auto mapped = std::make_shared<const phalanx::data::MappedSource>(source);
    for (const auto& split : mapped->info().splits) {
      const std::int64_t batch = std::min<std::int64_t>(split.count, 4);
      const std::int64_t sample_bytes = std::int64_t{split.height} * split.width * split.channels;
      if (batch <= 0 || sample_bytes <= 0 || sample_bytes * batch > largest_batch_bytes) continue;
      phalanx::data::MappedSplitReader reader(mapped, split.name);
      std::vector<std::uint8_t> images(static_cast<std::size_t>(sample_bytes * batch));
      std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
      reader.read(split.count - batch, split.count, images.data(), labels.data());
    }
  });
  return 0;
}
