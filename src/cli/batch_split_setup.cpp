// Three phases, so that no rank waits in a collective that another rank left with an error: each
// rank reads what it needs (a checkpoint) or measures (probe steps) on its own, agreed; then the
// ranks gather rates and devices; then every rank computes the same split from the same numbers.
#include "batch_split_setup.hpp"

#include <algorithm>

#include "phalanx/core/error.hpp"
#include "rank_setup.hpp"

namespace phalanx::cli {

bool asks_for_split(const config::Config& config) {
  return config.distributed.batch_split == "throughput" || !config.distributed.local_batches.empty();
}

int resolve_batch_split(const config::Config& config, const train::CheckpointHeader* resume,
                        backend::Backend& backend, const comm::Communicator& world,
                        train::BatchSplit& split) {
  split = train::BatchSplit{};
  std::vector<int> stored;
  train::ThroughputProbe probe;
  // A resume on another number of ranks re-cuts the checkpoint's global batch (elastic); with
  // elastic.global_batch: change the checkpoint's split does not matter: the split is made as for
  // a new run.
  const bool change = config.elastic.global_batch == "change";
  bool elastic = false;
  int status = agree(world, [&] {
    train::require_split_fits(config, world.size());
    if (resume && !change) elastic = train::is_elastic_resume(*resume, world.size());
  });
  if (status) return status;
  const bool fresh = !resume || change;
  const bool measure = (fresh || elastic) && config.distributed.local_batches.empty() &&
                       config.distributed.batch_split == "throughput";
  status = agree(world, [&] {
    if (!fresh && !elastic)
      stored = train::stored_split(*resume, config, world.size());
    else if (measure)
      probe = train::measure_throughput(config, backend, config.train.batch_size);
  });
  if (status) return status;

  const auto kinds = world.allgather(static_cast<std::uint64_t>(backend.device_kind() == DeviceKind::Cuda));
  const auto rates = world.allgather(probe.images_per_second);
  double probe_seconds = probe.seconds;
  world.allreduce_max(&probe_seconds, 1);

  return agree(world, [&] {
    if (elastic) {
      split.method = !config.distributed.local_batches.empty() ? "explicit"
                     : measure                                 ? "throughput"
                                                               : "equal";
      split.local_batches = train::elastic_split(*resume, config, world.size(), rates);
      split.checkpoint_local_batches = resume->local_batches;
      if (split.checkpoint_local_batches.empty())
        split.checkpoint_local_batches.assign(
            static_cast<std::size_t>(resume->world_size),
            static_cast<int>(train::stored_global_batch(*resume) / resume->world_size));
      split.stored_in = resume->path;
      if (measure) {
        split.images_per_second = rates;
        split.probe_seconds = probe_seconds;
      }
    } else if (!fresh) {
      // Stored splits of equal runs at train.batch_size need no mention; anything else (an uneven
      // split, or the even split of an elastic resume) is reused as stored.
      if (std::all_of(stored.begin(), stored.end(),
                      [&](int batch) { return batch == config.train.batch_size; }) &&
          !asks_for_split(config))
        return;
      split.method = config.distributed.local_batches.empty() ? config.distributed.batch_split : "explicit";
      split.local_batches = stored;
      split.stored_in = resume->path;
    } else if (!config.distributed.local_batches.empty()) {
      split.method = "explicit";
      split.local_batches = config.distributed.local_batches;
    } else if (measure) {
      split.method = "throughput";
      split.local_batches = train::split_by_throughput(
          static_cast<std::int64_t>(config.train.batch_size) * world.size(), rates);
      split.images_per_second = rates;
      split.probe_seconds = probe_seconds;
    } else {
      return;
    }
    for (const auto kind : kinds) split.devices.push_back(kind ? "cuda" : "cpu");
  });
}

}  // namespace phalanx::cli
