// How the trainer gets its training split (data.cache): this rank's own copy (`rank`), one copy
// per node in shared memory (`node`) or streamed from the file (`none`); `auto` picks by the
// split's size against the node's memory budget (data.max_cache_gb). docs/DATA.md explains them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/data/sample_source.hpp"

namespace phalanx::data {

// From the most memory per node to the least: ranks that chose differently take the largest value.
enum class CacheMode { Rank, Node, None };

struct CacheChoice {
  CacheMode mode = CacheMode::Rank;
  std::string reason;  // one line for the log: what was chosen and why
};

std::string cache_mode_name(CacheMode mode);

// `requested`: auto | rank | node | none. auto takes `rank` when every rank of the node can hold a
// copy within `budget_bytes`, else `node` when one copy fits, else `none`. An explicit mode is
// taken as asked.
CacheChoice choose_cache(config::DataCache requested, std::int64_t split_bytes, int ranks_on_node,
                         std::int64_t budget_bytes);

// Every rank must hold the split alike: the node cache is collective, and streaming's epoch order
// (chunk windows) is not the caches' permutation. Nodes may choose differently for auto (their
// rank counts, their cgroup memory limits): every rank takes the most frugal choice of any
// (collective), with a reason that says so where it is not its own.
CacheChoice agree_on_cache(CacheChoice choice, const comm::Communicator& communicator);

// data.max_cache_gb in bytes; 0 means half of the memory this process may use (the node's physical
// memory, or its cgroup's limit where lower).
std::int64_t cache_budget_bytes(double max_cache_gb);

// Opens the training split as configured. Collective over `communicator` (every rank calls it):
// the node cache allocates and fills its shared copy together, and a read error on any rank
// fails every rank with exit status 2 instead of leaving the others waiting. The source's
// `cache_description` says what was chosen.
std::shared_ptr<SampleSource> open_training_source(const config::DataConfig& data,
                                                   const comm::Communicator& communicator);

}  // namespace phalanx::data
