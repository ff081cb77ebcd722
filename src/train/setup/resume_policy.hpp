// The resume policy: what a checkpoint may continue in this run and what it changes there. The
// settings that fix a run's trajectory must match; the number of ranks may change (the global batch
// is cut over the new ranks) and, with elastic.global_batch: change, the global batch, the learning
// rate following elastic.learning_rate_rule (docs/CHECKPOINTS.md, "Elastic resume").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "phalanx/config/config.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/running_totals.hpp"

namespace phalanx::train {

// This run, as far as a resume is concerned.
struct ResumingRun {
  const config::Config& config;
  int world_size = 1;
  int rank = 0;
  std::vector<int> local_batches;  // every rank's
  std::int64_t global_batch = 0;
  std::int64_t steps_per_epoch = 0;
  data::ShardOrder order;         // of the training split
  std::string cache_description;  // how the training split is held, for a refusal
  std::int64_t train_samples = 0;  // the training split's count
  // KEY=VALUE set in the checkpoint's config before the comparison (JobRequest's).
  std::vector<std::string> checkpoint_overrides{};
};

struct ResumePlan {
  std::string checkpoint;
  TrainingPosition position;  // where training continues, in this run's global batches
  // The schedule's peak rate: the checkpoint's, rescaled when this resume changes the global batch.
  double learning_rate = 0;
  // What changed (summary.json "elastic"); null when neither the world size nor the global batch did.
  nlohmann::json elastic;
  // This rank's loss sums to continue: its own on the same split; on another split rank 0 takes
  // the merged sums of the checkpoint's ranks and the others start at zero. None in checkpoints
  // written before the totals were stored.
  std::optional<RunningTotals> running_totals;
};

// Checks `header` against `run` (InvalidInput naming the checkpoint and what differs) and plans
// the resume. Pure: every rank plans the same from the same header.
ResumePlan plan_resume(const CheckpointHeader& header, const ResumingRun& run);

// The settings that fix a run's trajectory: a resumed run may extend epochs or change max_steps,
// logging, checkpointing, threads, the data path (a moved file) or model.init_from (read at the
// first start only), nothing else.
config::Config trajectory_settings(config::Config config);

}  // namespace phalanx::train
