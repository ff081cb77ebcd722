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
  const phalanx::fuzz::TextWithOverrides input = phalanx::fuzz::split_text_and_overrides(data, size);
  const std::string path = phalanx::fuzz::write_scratch_file("sweep/sweep.yaml", input.text);
  phalanx::fuzz::accept_input_errors([&] {
    const phalanx::config::SweepConfig sweep = phalanx::config::load_sweep(path, input.overrides);
    if (sweep.search == phalanx::config::Search::Grid) (void)phalanx::config::grid_points(sweep);
  });
  return 0;
}
