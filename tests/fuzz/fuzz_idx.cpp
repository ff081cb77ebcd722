// Fuzz target: the IDX importer (MNIST, Fashion-MNIST). Input: the four files framed as
// fuzz_support.hpp's split_framed says, in the order train images, train labels, test images,
// test labels (plain or gzip bytes: zlib reads both); imported into a scratch dataset.
#include <cstdint>
#include <filesystem>
#include <string>

#include "fuzz_support.hpp"
#include "phalanx/data/importers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = phalanx::fuzz::split_framed(data, size, 4);
  const char* const names[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                               "t10k-labels-idx1-ubyte"};
  for (int index = 0; index < 4; ++index) phalanx::fuzz::write_scratch_file(std::string("idx/") + names[index], parts[index]);
  const std::string directory = (phalanx::fuzz::scratch_directory() / "idx").string();
  const std::string output = (phalanx::fuzz::scratch_directory() / "idx.h5").string();
  phalanx::fuzz::accept_input_errors([&] { phalanx::data::import_idx(directory, output, {}); });
  std::filesystem::remove(output);
  return 0;
}
