// The resume policy (resume_policy.hpp). The global batch, not the world size, fixes a run's
// trajectory: the epoch's permutation is cut into global batches of that size and each rank's
// gradient is weighted by its share of it, so a resume may spread the same global batch over
// another number of ranks and continue exactly.
#include "setup/resume_policy.hpp"

#include <cmath>

#include "phalanx/core/error.hpp"

namespace phalanx::train {

config::Config trajectory_settings(config::Config config) {
  config.name = "";
  config.device = config::Device::Auto;
  config.threads = 0;
  config.data.path = "";
  // A resume takes its weights from the checkpoint: where the first start took them from is history
  // (train.freeze stays: which parameters move is part of the trajectory).
  config.model.init_from = "";
  config.data.test_split = "";
  config.data.prefetch_batches = 1;
  config.train.epochs = 1;
  config.train.max_steps.reset();
  config.train.accumulation_steps = 0;  // the same update in other pieces
  config.train.log_every_steps = 1;
  config.train.nonfinite = config::NonFinite::Stop;  // what happens to a step that fails, not to those that do not
  config.checkpoint = {};
  config.distributed = {};
  config.elastic = {};
  config.trace = {};
  config.eval = {};  // what evaluation reports, not what training does
  config.train.early_stop.reset();  // when training ends, as epochs and max_steps may change
  return config;
}

namespace {

void require_same_trajectory(const CheckpointHeader& header, const ResumingRun& run) {
  auto written = trajectory_settings(
      config::parse(header.config_text, header.path + ":/config", run.checkpoint_overrides));
  auto current = trajectory_settings(run.config);
  if (!header.data_order.empty()) {
    // The checkpoint names its order, which require_same_order compares: how the split is held
    // (a copy per rank or per node, the memory budget auto chooses by) may change with the nodes
    // a job is requeued on.
    written.data.cache = current.data.cache;
    written.data.max_cache_gb = current.data.max_cache_gb;
  }
  if (run.config.elastic.global_batch == config::ResumeGlobalBatch::Change) written.train.batch_size = current.train.batch_size;
  const std::string before = config::to_yaml(written);
  const std::string now = config::to_yaml(current);
  PHALANX_REQUIRE_INPUT(
      before == now, header.path,
      ": cannot resume with a different seed, model, optimizer, "
      "schedule, batch size or training split: ",
      config::first_difference(now, before, "in the checkpoint"),
      " (epochs, max_steps and checkpoint settings may change; the number of ranks may change "
      "too, and train.batch_size with elastic.global_batch: change)");
  // Mid-epoch the order must go on as it was, and a permutation is a function of the count: on a
  // split of another size the rest of the epoch would repeat some samples and skip others. (data.path
  // may change: the same data moved, or copied to local disk.)
  PHALANX_REQUIRE_INPUT(header.position.step_in_epoch == 0 || header.train_samples == 0 ||
                            header.train_samples == run.train_samples,
                        header.path, ": written at step ", header.position.step_in_epoch, " of epoch ",
                        header.position.epoch + 1, " of a training split of ", header.train_samples,
                        " samples, but this run's has ", run.train_samples,
                        ": the rest of the epoch would repeat some samples and skip others; resume with the "
                        "same data, or from a checkpoint at an epoch's end");
  PHALANX_REQUIRE_INPUT(header.position.step_in_epoch < run.steps_per_epoch, header.path, ": resumes at step ",
                        header.position.step_in_epoch, " of an epoch, but this data gives ",
                        run.steps_per_epoch, " steps per epoch (is it the same dataset?)");
  const TrainingPosition& position = header.position;
  PHALANX_REQUIRE_INPUT(position.epoch >= 0 && position.step_in_epoch >= 0 && position.global_step >= 0,
                        header.path, ": its position (epoch ", position.epoch, ", step ",
                        position.step_in_epoch, " of it, step ", position.global_step,
                        " in all) is negative (an edited file?)");
  // train.epochs may change on resume, but not to before where the checkpoint stands: the run
  // would have no epochs left to take its place in. At the end of an epoch (step 0 of the next)
  // the run may end right there.
  const std::int64_t epochs_needed = position.epoch + (position.step_in_epoch > 0 ? 1 : 0);
  PHALANX_REQUIRE_INPUT(run.config.train.epochs >= epochs_needed, header.path, ": written at step ",
                        position.step_in_epoch, " of epoch ", position.epoch + 1, ", past train.epochs ",
                        run.config.train.epochs, ": resume with train.epochs of at least ", epochs_needed);
}

double learning_rate_factor(config::LearningRateRule rule, double batch_ratio) {
  switch (rule) {
    case config::LearningRateRule::Linear: return batch_ratio;
    case config::LearningRateRule::Sqrt: return std::sqrt(batch_ratio);
    case config::LearningRateRule::Keep: break;
  }
  return 1.0;
}

// The split and the data order must continue as they were, unless the resume re-cuts the global
// batch (`recut`): then a streamed split cannot follow.
void require_same_order(const CheckpointHeader& header, const ResumingRun& run, bool recut,
                        const std::string& sizes) {
  // Mid-epoch the run must continue the order it was in; at an epoch's start any order takes
  // every sample once. data.cache: auto chooses per node (streaming where the split does not fit
  // in memory), and streaming's order follows the file's chunk size.
  const std::string order = run.order.describe();
  PHALANX_REQUIRE_INPUT(
      header.data_order.empty() || header.position.step_in_epoch == 0 || header.data_order == order,
      header.path, ": written at step ", header.position.step_in_epoch, " of epoch ",
      header.position.epoch + 1, " with the training data in the order '", header.data_order,
      "', but this run takes it in the order '", order, "' (", run.cache_description,
      "): the epoch would repeat some samples and skip others; resume where the split is "
      "held as it was (data.cache: none streams it, rank or node permute it; streaming "
      "needs a file of the same chunk size), or from a checkpoint written at an epoch's end");
  PHALANX_REQUIRE_INPUT(recut || header.local_batches.empty() || header.local_batches == run.local_batches,
                        header.path, ": trained with another batch split than this run's (", run.local_batches.size(),
                        " ranks, global batch ", run.global_batch,
                        "); a resumed run keeps the split it was trained with");
  // Streaming cuts each epoch's chunk sequence into one contiguous part per rank and shuffles
  // within each part: another split reorders the samples, so it would not continue the run.
  PHALANX_REQUIRE_INPUT(!recut || run.order.kind == data::ShardOrder::Kind::Permutation, sizes,
                        ": the training data is streamed (", run.cache_description,
                        "), and a streamed epoch's order is cut per rank; resume on ", header.world_size,
                        " ranks with the same global batch, or train with the split cached in memory "
                        "(data.cache: rank or node) from the start");
}

}  // namespace

ResumePlan plan_resume(const CheckpointHeader& written, const ResumingRun& run) {
  CheckpointHeader header = written;
  const std::string& checkpoint = header.path;
  header.global_batch = stored_global_batch(header);
  const auto& elastic_config = run.config.elastic;
  const bool elastic = header.world_size != run.world_size;
  const bool batch_changed = header.global_batch != run.global_batch;
  const std::string sizes = checkpoint + ": written by " + std::to_string(header.world_size) +
                            " ranks with global batch " + std::to_string(header.global_batch) +
                            ", resumed on " + std::to_string(run.world_size) + " ranks";
  PHALANX_REQUIRE_INPUT(!batch_changed || elastic_config.global_batch == config::ResumeGlobalBatch::Change, sizes,
                        " with global batch ", run.global_batch, " (train.batch_size ",
                        run.config.train.batch_size,
                        "); a resumed run keeps its checkpoint's global batch: resume with the checkpoint's "
                        "train.batch_size and without distributed.local_batches (the batch is cut over the "
                        "ranks for you), give local batches that add up to ",
                        header.global_batch,
                        ", or set elastic.global_batch: change (and elastic.learning_rate_rule) to train on "
                        "with another global batch");
  if (batch_changed) {
    // The epoch's permutation is the same; the resumed run takes it in batches of the new size
    // from the sample the checkpoint reached, which must lie on a boundary of the new batches.
    const std::int64_t into_epoch = header.position.step_in_epoch * header.global_batch;
    PHALANX_REQUIRE_INPUT(
        into_epoch % run.global_batch == 0 && into_epoch / run.global_batch < run.steps_per_epoch, sizes,
        ": it stands ", into_epoch, " samples into epoch ", header.position.epoch + 1,
        ", which is not a whole number of the new global batches of ", run.global_batch,
        " within the epoch's ", run.steps_per_epoch,
        "; resume from a checkpoint at an epoch's end to change the global batch there "
        "(elastic.global_batch: change), or keep the global batch (elastic.global_batch: keep)");
    header.position.step_in_epoch = into_epoch / run.global_batch;
  }
  require_same_trajectory(header, run);
  require_same_order(header, run, elastic || batch_changed, sizes);

  ResumePlan plan;
  plan.checkpoint = checkpoint;
  plan.position = header.position;
  if (!header.running_totals.empty()) {
    // On the same split each rank continues its own sums (bitwise the straight run's losses).
    if (!elastic && !batch_changed)
      plan.running_totals = header.running_totals[static_cast<std::size_t>(run.rank)];
    else
      plan.running_totals = run.rank == 0 ? merge_running_totals(header.running_totals) : RunningTotals{};
  }
  // The schedule's peak rate: the checkpoint's (a rescaled one continues), rescaled again when
  // this resume changes the global batch.
  const double stored_rate = header.learning_rate > 0 ? header.learning_rate : run.config.optimizer.learning_rate;
  const double ratio = static_cast<double>(run.global_batch) / static_cast<double>(header.global_batch);
  plan.learning_rate =
      batch_changed ? stored_rate * learning_rate_factor(elastic_config.learning_rate_rule, ratio) : stored_rate;
  if (elastic || batch_changed) {
    plan.elastic = {{"checkpoint_world_size", header.world_size},
                    {"checkpoint_global_batch", header.global_batch},
                    {"checkpoint_learning_rate", stored_rate},
                    {"world_size", run.world_size},
                    {"global_batch", run.global_batch},
                    {"learning_rate", plan.learning_rate}};
    if (batch_changed) plan.elastic["learning_rate_rule"] = config::name_of(elastic_config.learning_rate_rule);
  }
  return plan;
}

}  // namespace phalanx::train
