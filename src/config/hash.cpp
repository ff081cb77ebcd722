// config::hash: FNV-1a over the resolved YAML. Ranks compare it at start-up to catch a run
// launched with different configs; hashing the text keeps it independent of struct layout.
#include "phalanx/config/config.hpp"

namespace phalanx::config {

std::uint64_t hash(const Config& config) {
  constexpr std::uint64_t offset_basis = 14695981039346656037ull;
  constexpr std::uint64_t prime = 1099511628211ull;
  std::uint64_t value = offset_basis;
  for (const char character : to_yaml(config)) {
    value ^= static_cast<unsigned char>(character);
    value *= prime;
  }
  return value;
}

}  // namespace phalanx::config
