// Fuzz target: the native dataset reader. Input: the bytes of a phalanx HDF5 dataset. The file
// is validated (read_dataset_info), then every split gets a batch read as the loader reads one
// (SplitReader) and a spot read as previews do (read_samples).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/split_reader.hpp"

namespace {

// Larger samples are skipped by this harness (not by the reader): a 28-byte header can claim
// them, and the allocation would be the harness's, not the reader's.
constexpr std::int64_t largest_batch_bytes = std::int64_t{64} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = phalanx::fuzz::write_scratch_file(
      "dataset.h5", std::string_view(reinterpret_cast<const char*>(data), size));
  phalanx::fuzz::accept_input_errors([&] {
    const phalanx::data::DatasetInfo info = phalanx::data::read_dataset_info(path);
    for (const auto& split : info.splits) {
      const std::int64_t batch = std::min<std::int64_t>(split.count, 4);
      const std::int64_t sample_bytes = std::int64_t{split.height} * split.width * split.channels;
      if (batch <= 0 || sample_bytes <= 0 || sample_bytes * batch > largest_batch_bytes) continue;
      phalanx::data::SplitReader reader(path, split.name);
      std::vector<std::uint8_t> images(static_cast<std::size_t>(sample_bytes * batch));
      std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
      reader.read(0, batch, images.data(), labels.data());
      (void)phalanx::data::read_samples(path, split.name, {split.count - 1, 0});
    }
  });
  return 0;
}
