// Fuzz target: the safetensors reader, as `phalanx checkpoint import` and `model.init_from` use it.
// Input: the bytes of a safetensors file. The header is read and validated, then every tensor's
// values are converted (the dtypes phalanx does not take are refused there).
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "phalanx/train/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = phalanx::fuzz::write_scratch_file(
      "weights.safetensors", std::string_view(reinterpret_cast<const char*>(data), size));
  phalanx::fuzz::accept_input_errors([&] {
    const phalanx::train::SafetensorsFile file(path);
    for (const phalanx::train::SafetensorsEntry& entry : file.entries()) {
      phalanx::fuzz::accept_input_errors([&] {
        const auto values = file.values(entry);
        if (static_cast<std::int64_t>(values.size()) != entry.shape.elements()) __builtin_trap();
      });
    }
  });
  return 0;
}
