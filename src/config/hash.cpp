// config::hash: FNV-1a over the resolved YAML. Ranks compare it at start-up to catch a run
// launched with different configs; hashing the text keeps it independent of struct layout.
#include "phalanx/config/config.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::config {

std::uint64_t hash(const Config& config) {
  return fnv1a_hash(to_yaml(config));
}

}  // namespace phalanx::config
