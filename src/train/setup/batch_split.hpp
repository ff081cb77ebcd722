// Heterogeneous data-parallel (docs/DESIGN.md §3): how one global batch is cut into the ranks' local
// batches. Equal: train.batch_size each. Throughput: the global batch stays train.batch_size x
// world size, and each rank's share follows its training throughput measured at start with probe
// steps, so ranks of unequal speed (a GPU and CPUs, or CPU ranks with unequal cores) finish their
// local steps at about the same time. Explicit: distributed.local_batches. The gradient of each
// rank is its local sum scaled by 1/G, so the summed update equals one step at the global batch.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/train/checkpoint.hpp"

namespace phalanx::train {

struct BatchSplit {
  std::string method = "equal";           // equal | throughput | explicit
  std::vector<int> local_batches;         // one per rank; empty: train.batch_size each
  std::vector<std::string> devices;       // per rank, "cpu" or "cuda" (for the log line)
  std::vector<double> images_per_second;  // measured per rank (a fresh throughput split only)
  double probe_seconds = 0;               // the slowest rank's probe time (0: no probe)
  std::string stored_in;                  // the checkpoint a resumed run took the split from
  // An elastic resume (another world size than the checkpoint's): the checkpoint's own split,
  // which this one re-cuts keeping its global batch; empty otherwise.
  std::vector<int> checkpoint_local_batches;

  std::int64_t global_batch() const;
  // "rank 0 cuda 230 (9100 img/s), rank 1 cpu 26 (1020 img/s)"
  std::string description() const;
  nlohmann::json to_json() const;
};

// The split of `global_batch` in proportion to `rates` (one per rank): each rank's exact share
// rounded down, the samples left over going to the largest remainders (the lower rank on ties),
// then every rank raised to at least 1 by taking from the largest batch. A pure function: every
// rank computes the same split from the same gathered rates. Needs global_batch >= rates.size().
std::vector<int> split_by_throughput(std::int64_t global_batch, const std::vector<double>& rates);

struct ThroughputProbe {
  double images_per_second = 0;
  double seconds = 0;  // the probe's whole time, warm-up included
  int timed_steps = 0;
};

// This rank's training throughput: probe steps (ProbeStep, the run's weights untouched) at
// `batch` on `backend`, warm-up first, then at least `minimum_steps` and `minimum_seconds` timed.
ThroughputProbe measure_throughput(const config::Config& config, backend::Backend& backend, int batch,
                                   int minimum_steps = 5, double minimum_seconds = 0.5);

// The checkpoint functions below take the header a resume read once (OpenCheckpoint), not a path
// to read again.

// The split a resumed run must keep: what the checkpoint of `header` stored (its local batches,
// or train.batch_size each when it stored none), checked against the world size and an explicit
// distributed.local_batches (InvalidInput naming the checkpoint on a mismatch).
std::vector<int> stored_split(const CheckpointHeader& header, const config::Config& config, int world_size);

// The split of a resume on another number of ranks than the checkpoint's (docs/DESIGN.md §3, elastic
// checkpoints): the checkpoint's global batch cut into `world_size` local batches, so that every
// update takes the same samples as before. distributed.local_batches when given (it must add up
// to the global batch), else in proportion to `rates` (batch_split: throughput, measured now), else
// as evenly as it divides (the lower ranks take one more sample each when it does not).
// InvalidInput naming the checkpoint, both world sizes and the key to set when it cannot.
std::vector<int> elastic_split(const CheckpointHeader& header, const config::Config& config, int world_size,
                               const std::vector<double>& rates);

// Whether resuming the checkpoint of `header` on `world_size` ranks is an elastic resume (another
// world size).
bool is_elastic_resume(const CheckpointHeader& header, int world_size);

// distributed.local_batches checked against the world size (InvalidInput naming the key).
void require_split_fits(const config::Config& config, int world_size);

// What each rank knows of a job's split before the ranks gather: whether the run is fresh (no
// checkpoint, or elastic.global_batch: change, which splits as a fresh run does), whether it
// resumes on another number of ranks, and whether every rank measures its throughput first.
// InvalidInput when distributed.local_batches does not fit the world size.
struct SplitPlan {
  bool fresh = true;
  bool elastic = false;
  bool measure = false;
};
SplitPlan plan_batch_split(const config::Config& config, const CheckpointHeader* resume, int world_size);

// What the ranks gathered: each rank's device and measured rate (0 when not measured), and the
// slowest rank's probe time.
struct SplitMeasurements {
  std::vector<bool> gpu;
  std::vector<double> rates;
  double probe_seconds = 0;
};

// The job's batch split (docs/DESIGN.md §3). A resume on the same ranks keeps its checkpoint's
// split (stored_split), on another number of ranks re-cuts its global batch (elastic_split); a
// fresh run takes distributed.local_batches, or with batch_split: throughput the measured rates'
// split of train.batch_size x ranks. A split nothing asked for (train.batch_size on every rank,
// also as stored) is returned empty. Pure: every rank decides the same from the same facts;
// InvalidInput naming the checkpoint or key when the resume cannot keep its split.
BatchSplit decide_batch_split(const config::Config& config, const CheckpointHeader* resume,
                              const SplitPlan& plan, const SplitMeasurements& measured);

// True when the config asks for a split other than the plain equal one: what a job of GPU and CPU
// ranks needs (its ranks differ in speed by an order of magnitude).
bool asks_for_split(const config::Config& config);

}  // namespace phalanx::train
