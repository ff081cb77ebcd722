// Fuzz target: the CIFAR importer. Input: one byte choosing the variant (even: CIFAR-10, odd:
// CIFAR-100), then the files framed as fuzz_support.hpp's split_framed says: CIFAR-10's five
// training batches, test batch and batches.meta.txt, or CIFAR-100's train.bin, test.bin and
// fine_label_names.txt; imported (with a validation share) into a scratch dataset.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "phalanx/data/importers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool cifar100 = (data[0] & 1) != 0;
  const std::vector<std::string> names =
      cifar100 ? std::vector<std::string>{"train.bin", "test.bin", "fine_label_names.txt"}
               : std::vector<std::string>{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                          "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin",
                                          "batches.meta.txt"};
  const std::filesystem::path directory = phalanx::fuzz::scratch_directory() / "cifar";
  std::filesystem::remove_all(directory);
  const auto parts = phalanx::fuzz::split_framed(data + 1, size - 1, static_cast<int>(names.size()));
  for (std::size_t index = 0; index < names.size(); ++index)
    phalanx::fuzz::write_scratch_file("cifar/" + names[index], parts[index]);
  const std::string output = (phalanx::fuzz::scratch_directory() / "cifar.h5").string();
  phalanx::fuzz::accept_input_errors([&] {
    phalanx::data::import_cifar(directory.string(), output,
                                cifar100 ? phalanx::data::CifarVariant::Cifar100 : phalanx::data::CifarVariant::Cifar10,
                                {}, 0.2, 1);
  });
  std::filesystem::remove(output);
  return 0;
}
