// Fuzz target: the training config. Input: YAML text, then optionally a NUL byte and `--set`
// overrides, one per line. A config that parses must come back equal from its own emitted YAML
// (config.hpp promises parse(to_yaml(c)) == c).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "phalanx/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Not a structured binding: clang 14 cannot capture one in the lambda below.
  const phalanx::fuzz::TextWithOverrides input = phalanx::fuzz::split_text_and_overrides(data, size);
  phalanx::fuzz::accept_input_errors([&] {
    const phalanx::config::Config config = phalanx::config::parse(input.text, "fuzz.yaml", input.overrides);
    const std::string emitted = phalanx::config::to_yaml(config);
    const phalanx::config::Config again = phalanx::config::parse(emitted, "emitted.yaml");
    if (!(again == config)) {
      std::fprintf(stderr, "fuzz: the emitted config parses to a different config:\n%s\n", emitted.c_str());
      std::abort();
    }
    (void)phalanx::config::hash(config);
  });
  return 0;
}
