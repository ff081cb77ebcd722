// Building what a trainer trains with (training_setup.hpp). One walk of the model's layers gives
// its plan; the plan's sizes are checked against the rank's memory before anything is allocated,
// so a model that cannot fit names what to change instead of failing an allocation.
#include "setup/training_setup.hpp"

#include <algorithm>
#include <numeric>

#include "loop/micro_batches.hpp"
#include "phalanx/config/evaluated_metric.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/data_source.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "phalanx/data/source_statistics.hpp"
#include "phalanx/data/training_source.hpp"
#include "phalanx/nn/model_plan.hpp"
#include "phalanx/train/evaluation.hpp"
#include "phalanx/train/input_size.hpp"
#include "phalanx/train/top_k.hpp"
#include "setup/memory_check.hpp"
#include "setup/resume_policy.hpp"

namespace phalanx::train {
namespace {

void require_model_fits(const config::Config& config, const nn::ModelSize& size, backend::Backend& backend,
                        const comm::Communicator& communicator) {
  const std::vector<std::string> states = optim::optimizer_state_names(config.optimizer);
  std::string optimizer = "optimizer.type " + config::name_of(config.optimizer.type) + ":";
  for (std::size_t index = 0; index < states.size(); ++index) optimizer += (index ? ", " : " ") + states[index];
  // train.ema holds the average and, for evaluating it, one exchange copy: two more per parameter.
  const std::size_t average_copies = config.train.ema ? 2 : 0;
  if (average_copies) optimizer += "; train.ema: the average and an exchange copy";
  require_model_state_fits(model_state_bytes(size, states.size() + average_copies),
                           memory_available_to_rank(backend, communicator.local_size()), size,
                           config.model.preset.empty() ? "model.layers" : "model.preset", optimizer,
                           backend.name());
}

void require_activations_fit(const TrainingSetup& setup, int local_batch, backend::Backend& backend,
                             const comm::Communicator& communicator) {
  // The weights and optimizer state are in memory already; the first step allocates the rest.
  const int micro_batches = std::max(1, setup.micro_batches);
  const std::int64_t micro_batch = (local_batch + micro_batches - 1) / micro_batches;
  const StepMemory needed =
      step_memory(*setup.model, micro_batch, local_batch, setup.config.data.prefetch_batches,
                  setup.config.data.augment.random_resized_crop ? setup.train_split->image_bytes() : 0);
  require_memory_fits(needed, memory_available_to_rank(backend, communicator.local_size()), local_batch,
                      micro_batches, backend.name());
}

void require_accumulation_arithmetic(const TrainingSetup& setup, int local_batch) {
  // The micro-batches slice the input batch by fp32 sample sizes and sum the fp32 parameter
  // gradients with the backend's add, which under reduced activations reads 2-byte elements
  // (activation_dtype: auto chose fp32 for this rank already).
  PHALANX_REQUIRE_INPUT(setup.micro_batches < 2 || setup.arithmetic.activation_dtype == config::Precision::Fp32,
                        "train.activation_dtype: ", setup.config.train.activation_dtype,
                        " cannot be combined with gradient accumulation (", setup.micro_batches,
                        " micro-batches of a local batch of ", local_batch,
                        ", train.accumulation_steps); use fp32 activations or one micro-batch per step");
}

void resume(TrainingSetup& setup, const OpenCheckpoint& checkpoint, backend::Backend& backend,
            const comm::Communicator& communicator,
            const std::vector<std::string>& checkpoint_config_overrides) {
  const ResumePlan plan = plan_resume(
      checkpoint.header(), ResumingRun{setup.config, communicator.size(), communicator.rank(),
                                       setup.local_batches, setup.global_batch, setup.steps_per_epoch,
                                       setup.train_split->order(), setup.train_split->cache_description,
                                       setup.train_split->count, checkpoint_config_overrides});
  const CheckpointHeader& header = checkpoint.header();
  checkpoint.load(backend, setup.model->registry(), setup.optimizer.get());
  if (setup.loss_scaler && header.loss_scale) setup.loss_scaler->restore(*header.loss_scale);
  setup.nonfinite_guard->restore_skipped(header.nonfinite_skipped_steps);
  setup.position = plan.position;
  setup.resumed_totals = plan.running_totals;
  setup.learning_rate = plan.learning_rate;
  setup.elastic = plan.elastic;
  setup.resumed_from = plan.checkpoint;
  // train.ema is part of the trajectory: the resume policy refused a checkpoint of a run without it.
  if (setup.config.train.ema) setup.resumed_average = checkpoint.average(setup.model->registry());
  setup.resumed_watches.early_stop = header.early_stop;
  setup.resumed_watches.keep_best = header.keep_best;
}

// train.early_stop.metric and checkpoint.keep_best name a metric the run records: a top-k one
// needs its k among those evaluation reports (the config check did the rest).
void require_recorded_metric(const std::string& metric, const std::string& key, const std::vector<int>& top_k,
                             std::size_t classes, const std::string& source) {
  const std::optional<config::EvaluatedMetric> known = config::evaluated_metric(metric);
  if (!known || !known->top_k) return;
  std::string reported;
  for (const int k : top_k) reported += (reported.empty() ? "" : ", ") + std::to_string(k);
  PHALANX_REQUIRE_INPUT(
      std::find(top_k.begin(), top_k.end(), *known->top_k) != top_k.end(), key, ": '", metric,
      "' is not recorded: evaluation reports ",
      reported.empty() ? std::string("no top-k accuracy") : "top-k for k in [" + reported + "]", " for the ",
      classes, " classes of ", source, " (a k in eval.top_k, at most ", classes, ", is reported)");
}

// One walk of the layers gives the plan; its sizes are checked before the model allocates it.
void make_model(TrainingSetup& setup, const Shape& sample, const std::string& config_source,
                backend::Backend& backend, const comm::Communicator& communicator) {
  const config::Config& config = setup.config;
  const auto classes = static_cast<int>(setup.dataset.classes.size());
  // A model that does not fit the data is the config's and the data's: both are named, with the
  // key (the layers' own message names the layer and what does not fit).
  nn::ModelPlan model_plan = [&] {
    try {
      return nn::ModelPlan(config.model, sample, classes);
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::InvalidInput) throw;
      throw_input_error((config_source.empty() ? std::string() : config_source + ": ") +
                        (config.model.preset.empty() ? std::string("model.layers")
                                                     : "model.preset '" + config.model.preset + "'") +
                        " on " + data::source_name(config.data) + " (samples " + sample.to_string() + ", " +
                        std::to_string(classes) + " classes): " + error.message());
    }
  }();
  require_model_fits(config, model_plan.size(), backend, communicator);
  setup.model = std::make_unique<nn::Model>(std::move(model_plan), backend, config.seed);
  setup.optimizer = optim::make_optimizer(config.optimizer, backend, setup.model->registry().parameter_count());
  if (config.train.loss_scale == config::LossScale::Dynamic ||
      (config.train.loss_scale == config::LossScale::Auto && setup.arithmetic.precision == config::Precision::Fp16))
    setup.loss_scaler = std::make_unique<optim::LossScaler>(config.train.loss_scale_initial);
  setup.nonfinite_guard = std::make_unique<NonFiniteGuard>(config.train.nonfinite, backend);
}

}  // namespace

TrainingSetup set_up_training(TrainingRequest request, const comm::Communicator& communicator,
                              backend::Backend& backend) {
  TrainingSetup setup;
  setup.config = std::move(request.config);
  setup.run_directory = std::move(request.run_directory);
  setup.threads = request.threads;
  setup.nccl = request.nccl;
  setup.quiet = request.quiet;
  setup.handover_check = std::move(request.handover_check);
  setup.batch_split = std::move(request.batch_split);
  config::Config& config = setup.config;

  setup.local_batches = setup.batch_split.local_batches;
  if (setup.local_batches.empty())
    setup.local_batches.assign(static_cast<std::size_t>(communicator.size()), config.train.batch_size);
  PHALANX_CHECK(static_cast<int>(setup.local_batches.size()) == communicator.size(), setup.local_batches.size(),
                " local batches for ", communicator.size(), " ranks");
  const int local_batch = setup.local_batches[static_cast<std::size_t>(communicator.rank())];
  // The rank's micro-batches per step decide how activation_dtype: auto holds activations.
  setup.micro_batches = micro_batches_per_step(config, local_batch);
  setup.arithmetic = apply_arithmetic(config, backend, setup.micro_batches);
  setup.dataset = data::describe_dataset(config.data, setup.run_directory, communicator);
  setup.top_k = reported_top_k(config.eval.top_k, static_cast<int>(setup.dataset.classes.size()),
                               data::source_name(config.data));
  if (config.train.early_stop)
    require_recorded_metric(config.train.early_stop->metric, "train.early_stop.metric", setup.top_k,
                            setup.dataset.classes.size(), data::source_name(config.data));
  if (!config.checkpoint.keep_best.empty())
    require_recorded_metric(config.checkpoint.keep_best, "checkpoint.keep_best", setup.top_k,
                            setup.dataset.classes.size(), data::source_name(config.data));
  // The test split by its key, as the training split is (the reader would name only the file).
  if (!setup.dataset.find_split(config.data.test_split)) {
    std::string available;
    for (const auto& split : setup.dataset.splits) available += (available.empty() ? "" : ", ") + split.name;
    throw_input_error(data::source_name(config.data) + ": has no split '" + config.data.test_split +
                      "' (data.test_split; it has: " + available + ")");
  }
  setup.train_split = data::open_training_source(config.data, communicator);
  const Shape sample = model_sample_shape(config.data, setup.train_split->height, setup.train_split->width,
                                          setup.train_split->channels, data::source_name(config.data));
  setup.test_split = std::make_shared<const data::Split>(
      evaluation_input(config.data, read_evaluation_part(config.data, config.data.test_split, communicator)));

  make_model(setup, sample, request.config_source, backend, communicator);
  PHALANX_REQUIRE_INPUT(config.distributed.grad_dtype == config::GradientDtype::Fp32 || setup.nccl != nullptr,
                        "distributed.grad_dtype: ", config.distributed.grad_dtype,
                        " compresses the NCCL all-reduce of jobs whose ranks all drive a GPU; this job sums "
                        "gradients with MPI on host memory (use fp32)");

  setup.global_batch =
      std::accumulate(setup.local_batches.begin(), setup.local_batches.end(), std::int64_t{0});
  PHALANX_REQUIRE_INPUT(setup.train_split->count >= setup.global_batch, data::source_name(config.data),
                        ": split '", config.data.train_split, "' has ", setup.train_split->count,
                        " samples, fewer than one global batch of ", setup.global_batch, " (",
                        setup.batch_split.local_batches.empty()
                            ? "train.batch_size " + std::to_string(config.train.batch_size) + " x " +
                                  std::to_string(communicator.size()) + " ranks"
                            : "local batches " + setup.batch_split.description(),
                        "): lower the batch size or use more data");
  if (request.set_length) request.set_length(config, setup.global_batch, setup.train_split->count);
  require_activations_fit(setup, local_batch, backend, communicator);
  require_accumulation_arithmetic(setup, local_batch);
  const data::ShardPlan plan(setup.train_split->count, setup.local_batches, communicator.rank(), config.seed);
  setup.steps_per_epoch = plan.steps_per_epoch();
  setup.learning_rate = config.optimizer.learning_rate;
  freeze_parameters(config, setup.model->registry(), setup.initial_weights);
  if (request.checkpoint) {
    resume(setup, *request.checkpoint, backend, communicator, request.checkpoint_config_overrides);
  } else if (!config.model.init_from.empty() && communicator.rank() == 0) {
    // Rank 0 alone reads the file: the trainer starts every rank from rank 0's weights, so one
    // read (of a file that may be hundreds of megabytes) gives every rank the same weights.
    initialise_from_file(config, static_cast<int>(setup.dataset.classes.size()), backend,
                         setup.model->registry(), setup.initial_weights);
  }
  setup.schedule = std::make_unique<optim::Schedule>(config.schedule, setup.learning_rate, setup.steps_per_epoch,
                                                     setup.steps_per_epoch * config.train.epochs);
  // Updates to the end of the epochs: counted from where the run stands in the epochs, which after
  // a resume that changed the global batch is not the number of updates made so far.
  const TrainingPosition& position = setup.position;
  const std::int64_t total_steps = position.global_step + setup.steps_per_epoch * config.train.epochs -
                                   (position.epoch * setup.steps_per_epoch + position.step_in_epoch);
  setup.last_step = config.train.max_steps ? std::min(*config.train.max_steps, total_steps) : total_steps;
  setup.config_text = config::to_yaml(config);
  return setup;
}

}  // namespace phalanx::train
