// Fuzz target: the sweep file. Input: the sweep file's YAML, then optionally a NUL byte and
// `--set` overrides one per line. The sweep file sits beside a fixed, valid base config
// (base.yaml), so `config: base.yaml` reaches the base-config checks too.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "phalanx/config/sweep_config.hpp"

namespace {

const char* const base_config = R"(name: base
seed: 1
model:
  preset: lenet5
data:
  path: data.h5
optimizer:
  type: sgd
  learning_rate: 0.05
  momentum: 0.9
train:
  epochs: 4
  batch_size: 64
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string base_path = phalanx::fuzz::write_scratch_file("sweep/base.yaml", base_config);
  (void)base_path;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t separator = input.find('\0');
  std::vector<std::string> overrides;
  if (separator != std::string::npos) {
    std::size_t begin = separator + 1;
    while (begin <= input.size()) {
      const std::size_t end = std::min(input.find('\n', begin), input.size());
      if (end > begin) overrides.push_back(input.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  const std::string path = phalanx::fuzz::write_scratch_file("sweep/sweep.yaml", input.substr(0, separator));
  phalanx::fuzz::accept_input_errors([&] {
    const phalanx::config::SweepConfig sweep = phalanx::config::load_sweep(path, overrides);
    if (sweep.search == "grid") (void)phalanx::config::grid_points(sweep);
  });
  return 0;
}
