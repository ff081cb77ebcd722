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
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t separator = input.find('\0');
  const std::string yaml_text = input.substr(0, separator);
  std::vector<std::string> overrides;
  if (separator != std::string::npos) {
    std::size_t begin = separator + 1;
    while (begin <= input.size()) {
      const std::size_t end = std::min(input.find('\n', begin), input.size());
      if (end > begin) overrides.push_back(input.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  phalanx::fuzz::accept_input_errors([&] {
    const phalanx::config::Config config = phalanx::config::parse(yaml_text, "fuzz.yaml", overrides);
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
