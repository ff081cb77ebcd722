// The training loop. run() reads top to bottom as DESIGN §1 draws it: next batch, forward and
// loss, backward with the gradient exchange overlapped, optimizer, bookkeeping. The differences
// between ranks sit behind three interfaces with one implementation per kind of rank:
// GradientExchange (MPI, NCCL, host-staged), StepClock (host or device timing) and InputPipeline
// (synchronous or uploaded during backward); the bookkeeping runs as step callbacks around it.
#include "loop/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/data/data_source.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "phalanx/data/source_statistics.hpp"
#include "phalanx/data/training_source.hpp"
#include "phalanx/report/run_report.hpp"
#include "setup/arithmetic_setup.hpp"
#include "reporting/breakdown_table.hpp"
#include "phalanx/train/build_information.hpp"
#include "phalanx/train/evaluation.hpp"
#include "loop/gradient_exchange.hpp"
#include "loop/input_pipeline.hpp"
#include "setup/memory_check.hpp"
#include "phalanx/train/progress.hpp"
#include "control/run_control.hpp"
#include "loop/step_clock.hpp"
#include "reporting/step_time_statistics.hpp"

namespace phalanx::train {

namespace {
constexpr int evaluation_batch = 256;
}  // namespace

Trainer::Trainer(TrainerOptions options, const comm::Communicator& communicator, backend::Backend& backend)
    : options_(std::move(options)), communicator_(communicator), backend_(backend) {
  const auto& config = options_.config;
  local_batches_ = options_.batch_split.local_batches;
  if (local_batches_.empty())
    local_batches_.assign(static_cast<std::size_t>(communicator_.size()), config.train.batch_size);
  PHALANX_CHECK(static_cast<int>(local_batches_.size()) == communicator_.size(), local_batches_.size(),
                " local batches for ", communicator_.size(), " ranks");
  // The rank's micro-batches per step decide how activation_dtype: auto holds activations.
  arithmetic_ = apply_arithmetic(
      config, backend_,
      micro_batches_per_step(config, local_batches_[static_cast<std::size_t>(communicator_.rank())]));
  dataset_info_ = data::describe_dataset(config.data, options_.run_directory, communicator_);
  train_split_ = data::open_training_source(config.data, communicator_);
  test_split_ = std::make_shared<const data::Split>(
      read_evaluation_part(config.data, config.data.test_split, communicator_));
  const Shape sample{train_split_->height, train_split_->width, train_split_->channels};
  // One walk of the layers: the plan's sizes are checked, then the model allocates that plan.
  nn::ModelPlan model_plan(config.model, sample, static_cast<int>(dataset_info_.classes.size()));
  require_model_fits(model_plan.size());
  model_ = std::make_unique<nn::Model>(std::move(model_plan), backend_, config.seed);
  optimizer_ = optim::make_optimizer(config.optimizer, backend_, model_->registry().parameter_count());
  if (config.train.loss_scale == "dynamic" ||
      (config.train.loss_scale == "auto" && arithmetic_.precision == "fp16"))
    loss_scaler_ = std::make_unique<optim::LossScaler>(config.train.loss_scale_initial);
  nonfinite_guard_ = std::make_unique<NonFiniteGuard>(nonfinite_policy(config.train.nonfinite), backend_);
  PHALANX_REQUIRE_INPUT(config.distributed.grad_dtype == "fp32" || options_.nccl != nullptr,
                        "distributed.grad_dtype: ", config.distributed.grad_dtype,
                        " compresses the NCCL all-reduce of jobs whose ranks all drive a GPU; this job sums "
                        "gradients with MPI on host memory (use fp32)");
  global_batch_ = std::accumulate(local_batches_.begin(), local_batches_.end(), std::int64_t{0});
  PHALANX_REQUIRE_INPUT(train_split_->count >= global_batch_, data::source_name(config.data), ": split '",
                        config.data.train_split, "' has ", train_split_->count,
                        " samples, fewer than one global batch of ", global_batch_, " (",
                        options_.batch_split.local_batches.empty()
                            ? "train.batch_size " + std::to_string(config.train.batch_size) + " x " +
                                  std::to_string(communicator_.size()) + " ranks"
                            : "local batches " + options_.batch_split.description(),
                        "): lower the batch size or use more data");
  require_activations_fit();
  const data::ShardPlan plan(train_split_->count, local_batches_, communicator_.rank(), config.seed);
  steps_per_epoch_ = plan.steps_per_epoch();
  learning_rate_ = config.optimizer.learning_rate;
  schedule_ = std::make_unique<optim::Schedule>(config.schedule, learning_rate_, steps_per_epoch_,
                                                steps_per_epoch_ * config.train.epochs);

  // The CLI resolves --resume auto on rank 0 and hands every rank the same path, and the checkpoint
  // open: one seal check per rank.
  if (!options_.checkpoint && options_.resume == "auto")
    options_.checkpoint = RunDirectory(options_.run_directory, false).open_latest_checkpoint();
  else if (!options_.checkpoint && !options_.resume.empty())
    options_.checkpoint = std::make_shared<const OpenCheckpoint>(options_.resume);
  if (options_.checkpoint) resume_from(*options_.checkpoint);
  options_.checkpoint.reset();  // loaded: the file closes (unless the caller holds it too)
}

void Trainer::resume_from(const OpenCheckpoint& open_checkpoint) {
  CheckpointHeader header = open_checkpoint.header();
  const std::string& checkpoint = header.path;
  header.global_batch = stored_global_batch(header);
  const auto& elastic_config = options_.config.elastic;
  const int world_size = communicator_.size();
  const bool elastic = header.world_size != world_size;
  const bool batch_changed = header.global_batch != global_batch_;
  const std::string sizes = checkpoint + ": written by " + std::to_string(header.world_size) +
                            " ranks with global batch " + std::to_string(header.global_batch) +
                            ", resumed on " + std::to_string(world_size) + " ranks";
  // The global batch, not the world size, fixes the trajectory: the epoch's permutation is cut
  // into global batches of this size, each rank's gradient is weighted by its share of it.
  PHALANX_REQUIRE_INPUT(!batch_changed || elastic_config.global_batch == "change", sizes,
                        " with global batch ", global_batch_, " (train.batch_size ",
                        options_.config.train.batch_size,
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
        into_epoch % global_batch_ == 0 && into_epoch / global_batch_ < steps_per_epoch_, sizes,
        ": it stands ", into_epoch, " samples into epoch ", header.position.epoch + 1,
        ", which is not a whole number of the new global batches of ", global_batch_, " within the epoch's ",
        steps_per_epoch_,
        "; resume from a checkpoint at an epoch's end to change the global batch there "
        "(elastic.global_batch: change), or keep the global batch (elastic.global_batch: keep)");
    header.position.step_in_epoch = into_epoch / global_batch_;
  }
  require_resumable(checkpoint, header);
  PHALANX_REQUIRE_INPUT(
      elastic || batch_changed || header.local_batches.empty() || header.local_batches == local_batches_,
      checkpoint, ": trained with another batch split than this run's (", local_batches_.size(),
      " ranks, global batch ", global_batch_, "); a resumed run keeps the split it was trained with");
  // Streaming cuts each epoch's chunk sequence into one contiguous part per rank and shuffles
  // within each part: another split reorders the samples, so it would not continue the run.
  PHALANX_REQUIRE_INPUT(
      (!elastic && !batch_changed) || train_split_->order().kind == data::ShardOrder::Kind::Permutation,
      sizes, ": the training data is streamed (", train_split_->cache_description,
      "), and a streamed epoch's order is cut per rank; resume on ", header.world_size,
      " ranks with the same global batch, or train with the split cached in memory (data.cache: "
      "rank or node) from the start");
  open_checkpoint.load(backend_, model_->registry(), optimizer_.get());
  if (loss_scaler_ && header.loss_scale) loss_scaler_->restore(*header.loss_scale);
  nonfinite_guard_->restore_skipped(header.nonfinite_skipped_steps);
  position_ = header.position;
  if (!header.running_totals.empty()) {
    // On the same split each rank continues its own sums (bitwise the straight run's losses);
    // otherwise rank 0 continues the checkpoint's ranks' merged sums and the others start at zero.
    if (!elastic && !batch_changed)
      resumed_totals_ = header.running_totals[static_cast<std::size_t>(communicator_.rank())];
    else
      resumed_totals_ =
          communicator_.rank() == 0 ? merge_running_totals(header.running_totals) : RunningTotals{};
  }
  // The schedule's peak rate: the checkpoint's (a rescaled one continues), rescaled again when
  // this resume changes the global batch.
  const double stored_rate =
      header.learning_rate > 0 ? header.learning_rate : options_.config.optimizer.learning_rate;
  const double ratio = static_cast<double>(global_batch_) / static_cast<double>(header.global_batch);
  const double factor = elastic_config.learning_rate_rule == "linear" ? ratio
                        : elastic_config.learning_rate_rule == "sqrt" ? std::sqrt(ratio)
                                                                      : 1.0;
  learning_rate_ = batch_changed ? stored_rate * factor : stored_rate;
  if (learning_rate_ != options_.config.optimizer.learning_rate)
    schedule_ = std::make_unique<optim::Schedule>(options_.config.schedule, learning_rate_, steps_per_epoch_,
                                                  steps_per_epoch_ * options_.config.train.epochs);
  resumed_elastic_ = {{"checkpoint_world_size", header.world_size},
                      {"checkpoint_global_batch", header.global_batch},
                      {"checkpoint_learning_rate", stored_rate},
                      {"world_size", world_size},
                      {"global_batch", global_batch_},
                      {"learning_rate", learning_rate_}};
  if (batch_changed) resumed_elastic_["learning_rate_rule"] = elastic_config.learning_rate_rule;
  if (!elastic && !batch_changed) resumed_elastic_ = nullptr;
  resumed_from_ = checkpoint;
}

Trainer::~Trainer() = default;

namespace {
// The settings that fix a run's trajectory. A resumed run may extend epochs or change
// max_steps, logging, checkpointing, threads or the data path (a moved file), nothing else.
config::Config trajectory_settings(config::Config config) {
  config.name = "";
  config.device = "auto";
  config.threads = 0;
  config.data.path = "";
  config.data.test_split = "";
  config.data.prefetch_batches = 1;
  config.train.epochs = 1;
  config.train.max_steps.reset();
  config.train.accumulation_steps = 0;  // the same update in other pieces
  config.train.log_every_steps = 1;
  config.train.nonfinite = "stop";  // what happens to a step that fails, not to those that do not
  config.checkpoint = {};
  config.distributed = {};
  config.elastic = {};
  config.trace = {};
  return config;
}
}  // namespace

void Trainer::require_resumable(const std::string& checkpoint, const CheckpointHeader& header) const {
  auto written = trajectory_settings(config::parse(header.config_text, checkpoint + ":/config"));
  auto current = trajectory_settings(options_.config);
  if (options_.config.elastic.global_batch == "change") written.train.batch_size = current.train.batch_size;
  const std::string before = config::to_yaml(written);
  const std::string now = config::to_yaml(current);
  PHALANX_REQUIRE_INPUT(
      before == now, checkpoint,
      ": cannot resume with a different seed, model, optimizer, "
      "schedule, batch size or training split: ",
      config::first_difference(now, before, "in the checkpoint"),
      " (epochs, max_steps and checkpoint settings may change; the number of ranks may change "
      "too, and train.batch_size with elastic.global_batch: change)");
  PHALANX_REQUIRE_INPUT(header.position.step_in_epoch < steps_per_epoch_, checkpoint, ": resumes at step ",
                        header.position.step_in_epoch, " of an epoch, but this data gives ", steps_per_epoch_,
                        " steps per epoch (is it the same dataset?)");
}

struct Trainer::Bookkeeping {
  StepCallbacks callbacks;  // in the order they act after a step
  TrainingRecord& record;
  TrainingLosses& losses;
  EpochEndCallback& epoch_end;
  StopSignalCallback& stop;
  TraceCallback& trace;
};

nlohmann::json Trainer::run() {
  const auto& config = options_.config;
  start_session();
  auto& registry = model_->registry();
  const data::ShardPlan plan(train_split_->count, local_batches_, communicator_.rank(), config.seed,
                             train_split_->order());
  const int local_batch = plan.local_batch();
  // Updates to the end of the epochs: counted from where the run stands in the epochs, which after
  // a resume that changed the global batch is not the number of updates made so far.
  const std::int64_t total_steps =
      position_.global_step + steps_per_epoch_ * config.train.epochs - schedule_step(position_);
  const std::int64_t last_step =
      config.train.max_steps ? std::min(*config.train.max_steps, total_steps) : total_steps;

  // The step's parts that differ between CPU and GPU ranks (see their headers).
  const auto exchange = make_gradient_exchange(
      communicator_, options_.nccl, backend_, registry.gradients().data(), registry.parameter_count(),
      static_cast<std::size_t>(config.distributed.bucket_mb * 1024 * 1024),
      config.distributed.grad_dtype == "bf16" ? comm::WireType::BFloat16 : comm::WireType::Float32);
  const auto input = make_input_pipeline(backend_, train_split_, plan, config.data, dataset_info_, position_,
                                         config.train.epochs);
  Bookkeeping bookkeeping = make_bookkeeping(plan.global_batch(), last_step);
  const auto clock =
      make_step_clock(backend_, *exchange, options_.nccl != nullptr,
                      [&](const SettledStep& step) { bookkeeping.callbacks.step_settled(step); });
  Tensor grad_logits(backend_, Shape{local_batch, model_->classes()});
  const float gradient_scale = 1.0f / static_cast<float>(plan.global_batch());
  // Gradient accumulation: the local batch in micro-batches, one all-reduce and update per step.
  const auto micro_batches = make_micro_batches(local_batch);
  micro_batch_count_ = micro_batches ? micro_batches->count() : 1;
  const auto counts = communicator_.allgather(static_cast<std::uint64_t>(micro_batch_count_));
  if (std::any_of(counts.begin(), counts.end(), [](std::uint64_t count) { return count > 1; })) {
    std::string text = "gradient accumulation: micro-batches per rank [";
    for (std::size_t rank = 0; rank < counts.size(); ++rank)
      text += (rank ? ", " : "") + std::to_string(counts[rank]);
    progress_->line(
        text + "], one all-reduce and update per step (train.accumulation_steps: " +
        (config.train.accumulation_steps ? std::to_string(config.train.accumulation_steps) : "auto") +
        ", train.batch_size " + std::to_string(config.train.batch_size) + ")");
  }

  while (position_.global_step < last_step) {
    clock->begin_step();
    run_control_->enter("forward and backward", position_.global_step + 1, comm::StageKind::Local);
    const std::optional<BatchFacts> batch = input->next();  // GPU ranks: uploaded during the last backward
    if (!batch) break;
    clock->mark(Stage::DataWait);
    input->prepare();
    clock->mark(Stage::HostToDevice);
    const nn::ForwardContext context{nn::Mode::Training, config.seed, position_.global_step,
                                     communicator_.rank()};
    const float loss_scale = loss_scaler_ ? static_cast<float>(loss_scaler_->scale()) : 1.0f;
    const float loss_weight = gradient_scale * loss_scale;
    // With accumulation the micro-batches before the last train here, their gradients set aside.
    if (micro_batches)
      micro_batches->train_all_but_last(*model_, input->input(), input->labels(), context,
                                        static_cast<float>(config.train.label_smoothing), loss_weight);
    const Tensor& step_input = micro_batches ? micro_batches->last_input(input->input()) : input->input();
    Tensor& step_grad_logits = micro_batches ? micro_batches->last_grad_logits() : grad_logits;
    const Tensor& logits = model_->forward(
        step_input, micro_batches ? micro_batches->context_of(micro_batches->count() - 1, context) : context);
    // The loss totals stay where they were computed until the bookkeeping reads them.
    backend_.softmax_cross_entropy_deferred(
        micro_batches ? micro_batches->last_size() : local_batch, model_->classes(), logits.data(),
        micro_batches ? micro_batches->last_labels(input->labels()) : input->labels(),
        static_cast<float>(config.train.label_smoothing), loss_weight, step_grad_logits.data());
    clock->mark(Stage::Forward);
    exchange->begin_step();  // each bucket's all-reduce starts as soon as backward has finished it
    model_->backward(step_input, step_grad_logits, [&](std::int64_t offset) {
      if (micro_batches) micro_batches->add_summed(offset, registry.gradients().data());
      exchange->bucket_ready(offset);
    });
    clock->mark_queued(Stage::Backward);
    // GPU ranks fetch the next batch and start its upload while backward runs on the device.
    clock->set_aside(Stage::DataWait, input->fetch_ahead(position_.global_step + 1 < last_step));
    clock->mark(Stage::Backward);
    run_control_->enter("gradient all-reduce", position_.global_step + 1, comm::StageKind::Collective);
    exchange->wait();
    clock->mark(Stage::AllReduceWait);
    run_control_->enter("optimizer", position_.global_step + 1, comm::StageKind::Local);
    // Finite gradients, a stop signal, a handover: the step's one small collective, where a rank
    // also waits for a slower peer. The last step finishes the run instead of stopping it (that
    // costs less than a requeue).
    const StepAgreement agreement =
        agree_before_update(*exchange, *clock, position_.global_step + 1 == last_step);
    update_weights(agreement.gradients_finite);
    clock->mark(Stage::Optimizer);
    clock->record_upload(input->last_upload());

    StepEnd step{.batch = *batch, .epoch_done = advance_position(*batch, plan.global_batch())};
    step.global_step = position_.global_step;
    step.schedule_step = batch->epoch * steps_per_epoch_ + batch->step;
    step.last_step = step.global_step == last_step;
    step.stop_requested = agreement.stop;
    // The straggler report, a collective every log interval.
    if (!step.last_step)
      run_control_->end_of_step(step.global_step, clock->busy_seconds(),
                                step.global_step % config.train.log_every_steps == 0, run_directory_,
                                *progress_);
    clock->mark(Stage::SyncWait);
    step.seconds = clock->end_step(bookkeeping.record.run_steps, step.global_step, *batch);
    if (bookkeeping.callbacks.read_device_results(step)) {  // one wait for the device, for all of them
      clock->settle();
      bookkeeping.losses.take();
    }
    bookkeeping.callbacks.after_step(step);
    if (bookkeeping.stop.stopped()) {
      if (stopped_for_handover_) return {{"stopped_for_handover", true}, {"steps", position_.global_step}};
      return {{"stopped_by_signal", true}, {"steps", position_.global_step}};
    }
  }
  run_control_->enter("final evaluation and summary", position_.global_step, comm::StageKind::Collective);
  clock->settle();  // a run whose data ended early, too
  bookkeeping.losses.take();
  if (!bookkeeping.epoch_end.evaluated_last_step())
    evaluate_partial_epoch(bookkeeping.record.epoch_clock.seconds(), bookkeeping.losses.totals());
  save_checkpoint(CheckpointKind::Final, bookkeeping.losses.totals());
  bookkeeping.trace.trace().write_merged(communicator_, run_directory_.path() + "/trace.json",
                                         "rank " + std::to_string(communicator_.rank()) + " (" +
                                             communicator_.host_name() + ", " + backend_.name() + ")");
  return write_summary(bookkeeping.record, plan.global_batch(), local_batch);
}

void Trainer::start_session() {
  const bool leader = communicator_.rank() == 0;
  start_wall_ = wall_seconds_since_epoch();
  run_directory_ = RunDirectory(options_.run_directory, leader, !resumed_from_.empty());
  run_directory_.start_session(position_.global_step + 1, resumed_from_);
  run_directory_.write_config(options_.config_text);
  if (leader) data::write_statistics_sidecar(options_.config.data, options_.run_directory, dataset_info_);
  run_control_ = std::make_unique<RunControl>(communicator_, options_.run_directory,
                                              options_.config.distributed.timeout_s);
  // A handover resumes on more ranks: a streamed split cannot continue there (its epoch order is cut
  // per rank, see the resume checks), so such a run never stops for one.
  if (options_.handover_check && train_split_->order().kind == data::ShardOrder::Kind::Permutation)
    run_control_->set_handover_check(options_.handover_check);
  progress_ = std::make_unique<Progress>(leader && !options_.quiet, options_.config.train.log_every_steps);
  Progress& progress = *progress_;

  // Metrics of the machine beside the training ones (DESIGN §7): host CPU and memory on every
  // rank, and on GPU ranks utilisation, memory, power, temperature, clocks and energy via NVML,
  // matched by PCI bus id because NVML ignores CUDA_VISIBLE_DEVICES.
  host_sampler_ = std::make_unique<monitor::HostSampler>();
  if (backend_.device_kind() == DeviceKind::Cuda) {
    gpu_sampler_ = std::make_unique<monitor::GpuSampler>(monitor::GpuDeviceId{
        static_cast<unsigned>(backend::cuda_device(backend_)), backend::cuda_pci_bus_id(backend_)});
    if (!gpu_sampler_->available()) progress.line("GPU metrics unavailable: " + gpu_sampler_->reason());
  }

  // Every rank starts from rank 0's weights, whatever it initialised or loaded.
  broadcast_from_root(model_->registry().parameters());
  broadcast_from_root(model_->registry().buffers());

  // What train.precision/activation_dtype: auto became here, then how the backend computes so.
  std::string arithmetic_note = describe_resolution(options_.config.train, arithmetic_);
  if (const std::string backend_note = backend_.arithmetic_note(); !backend_note.empty())
    arithmetic_note += (arithmetic_note.empty() ? "" : ", ") + backend_note;
  const auto rank_lines = communicator_.gather_strings(
      "rank " + std::to_string(communicator_.rank()) + ", host " + communicator_.host_name() + ", device " +
          backend_.name() + ", threads " + std::to_string(options_.threads) +
          (arithmetic_note.empty() ? std::string() : ", " + arithmetic_note),
      0);
  for (const auto& line : rank_lines) progress.line(line);
  progress.line(model_->summary() + "; " + std::to_string(train_split_->count) +
                " training images, global batch " + std::to_string(global_batch_) + ", " +
                std::to_string(steps_per_epoch_) + " steps per epoch");
  if (!options_.batch_split.local_batches.empty())
    progress.line("batch split: " + options_.batch_split.description() +
                  (options_.batch_split.stored_in.empty() ? std::string()
                   : options_.batch_split.checkpoint_local_batches.empty()
                       ? " (as stored in " + options_.batch_split.stored_in + ")"
                       : " (the global batch of " + options_.batch_split.stored_in + " cut over " +
                             std::to_string(communicator_.size()) + " ranks)"));
  progress.line("data cache: " + train_split_->cache_description);
  if (!resumed_from_.empty())
    progress.line("resumed from " + resumed_from_ + " at epoch " + std::to_string(position_.epoch + 1) +
                  ", step " + std::to_string(position_.step_in_epoch));
  if (resumed_elastic_.is_object()) {
    const auto& facts = resumed_elastic_;
    const std::string checkpoint_ranks = std::to_string(facts["checkpoint_world_size"].get<int>());
    if (!facts.contains("learning_rate_rule")) {
      progress.line(
          "elastic resume: the checkpoint's " + checkpoint_ranks + " ranks' global batch of " +
          std::to_string(global_batch_) + " continues on " + std::to_string(communicator_.size()) +
          " ranks (same samples per update, same schedule); their running loss sums merged on rank 0");
    } else {
      char rates[160];
      std::snprintf(rates, sizeof(rates), "learning rate %g -> %g (elastic.learning_rate_rule: %s)",
                    facts["checkpoint_learning_rate"].get<double>(), learning_rate_,
                    facts["learning_rate_rule"].get<std::string>().c_str());
      progress.line("elastic resume: global batch " +
                    std::to_string(facts["checkpoint_global_batch"].get<std::int64_t>()) + " on " +
                    checkpoint_ranks + " ranks -> " + std::to_string(global_batch_) + " on " +
                    std::to_string(communicator_.size()) + " ranks (elastic.global_batch: change), " + rates +
                    ", continuing at batch " + std::to_string(position_.step_in_epoch) + " of " +
                    std::to_string(steps_per_epoch_) + " of epoch " + std::to_string(position_.epoch + 1));
    }
  }
  if (!resumed_from_.empty() && !resumed_totals_ &&
      (position_.step_in_epoch > 0 || position_.global_step % options_.config.train.log_every_steps != 0))
    progress.line("the checkpoint holds no running loss totals (written by an earlier version): epoch " +
                  std::to_string(position_.epoch + 1) +
                  "'s train_loss and the next step event's loss count the steps after the resume only");
}

Trainer::Bookkeeping Trainer::make_bookkeeping(std::int64_t global_batch, std::int64_t last_step) {
  const auto& config = options_.config;
  TrainingActions& actions = *this;
  StepCallbacks callbacks;
  auto& record = callbacks.add<TrainingRecord>();
  // A resumed run continues the epoch's and the log interval's sums where the checkpoint left them.
  auto& losses = callbacks.add<TrainingLosses>(
      backend_, local_batches_[static_cast<std::size_t>(communicator_.rank())], resumed_totals_);
  callbacks.add<ProgressCallback>(
      *progress_, record, losses,
      ProgressCallback::RunLength{config.train.epochs, steps_per_epoch_, global_batch, last_step,
                                  config.train.log_every_steps});
  callbacks.add<StepMetricsCallback>(communicator_, *run_control_, run_directory_, *schedule_,
                                     loss_scaler_.get(), *nonfinite_guard_, losses, global_batch,
                                     config.train.log_every_steps, start_wall_);
  auto& epoch_end = callbacks.add<EpochEndCallback>(actions, record, losses);
  // After the epoch's reset, as the checkpoint must hold the sums a resumed run continues.
  callbacks.add<CheckpointCallback>(actions, losses, config.checkpoint.every_steps);
  auto& stop = callbacks.add<StopSignalCallback>(actions, losses);
  auto& trace = callbacks.add<TraceCallback>(config.trace.steps);
  return Bookkeeping{std::move(callbacks), record, losses, epoch_end, stop, trace};
}

StepAgreement Trainer::agree_before_update(GradientExchange& exchange, StepClock& clock, bool last_step) {
  auto& registry = model_->registry();
  const std::int64_t step = position_.global_step + 1;
  // The finite check waits for the summed gradients without a bound: a stuck peer is caught first.
  exchange.wait_before_host_reads();
  const bool finite =
      nonfinite_guard_->local_gradients_finite(registry.gradients().data(), registry.parameter_count());
  // Sums of the same bits are the same on every rank, but a rank's own sums may still differ in
  // the last bits from another's under some all-reduce algorithms (MPI does not promise the same
  // result on every rank), and an overflow to inf is a last-bit matter: the ranks agree
  // explicitly, so none takes an update another skipped.
  const Stopwatch waiting;
  const StepAgreement agreement = run_control_->agree_before_update(step, finite, last_step);
  clock.set_aside(Stage::SyncWait, waiting.seconds());
  run_control_->enter("optimizer", step, comm::StageKind::Local);
  return agreement;
}

void Trainer::update_weights(bool finite) {
  auto& registry = model_->registry();
  float* gradients = registry.gradients().data();
  // With dynamic loss scaling an inf or NaN is first an overflow of the scaled gradients: the
  // scaler skips the update and halves the scale, as GradScaler does. At a scale of 1 or below
  // the gradients themselves are not finite, and train.nonfinite decides.
  if (!finite && (!loss_scaler_ || loss_scaler_->scale() <= 1.0)) on_nonfinite_gradients();
  bool update = finite;
  if (loss_scaler_)
    update = loss_scaler_->unscale_or_skip(finite, backend_, gradients, registry.parameter_count());
  else if (!finite)
    nonfinite_guard_->count_skipped();
  // The optimizer counts the updates it made (AdamW's bias correction), as GradScaler's do.
  const std::int64_t updates = position_.global_step + 1 - skipped_updates();
  if (update) optimizer_->step(registry, schedule_->learning_rate(schedule_step(position_)), updates);
}

void Trainer::require_model_fits(const nn::ModelSize& size) {
  // Before anything of the model is allocated: weights that cannot fit would fail an allocation
  // (exit status 1) or get the rank killed, not name what to change.
  const auto& config = options_.config;
  const std::vector<std::string> states = optim::optimizer_state_names(config.optimizer);
  std::string optimizer = "optimizer.type " + config.optimizer.type + ":";
  for (std::size_t index = 0; index < states.size(); ++index)
    optimizer += (index ? ", " : " ") + states[index];
  require_model_state_fits(
      model_state_bytes(size, states.size()), memory_available_to_rank(backend_, communicator_.local_size()),
      size, config.model.preset.empty() ? "model.layers" : "model.preset", optimizer, backend_.name());
}

void Trainer::require_activations_fit() {
  // Before the first step allocates them: the weights and optimizer state are in memory already.
  const auto& config = options_.config;
  const int local_batch = local_batches_[static_cast<std::size_t>(communicator_.rank())];
  const int micro_batches = std::max(1, micro_batches_per_step(config, local_batch));
  const std::int64_t micro_batch = (local_batch + micro_batches - 1) / micro_batches;
  const std::size_t needed =
      step_activation_bytes(*model_, micro_batch, local_batch, config.data.prefetch_batches);
  require_memory_fits(needed, memory_available_to_rank(backend_, communicator_.local_size()), local_batch,
                      micro_batches, backend_.name());
}

std::int64_t Trainer::skipped_updates() const {
  return loss_scaler_ ? loss_scaler_->state().skipped_steps : nonfinite_guard_->skipped_steps();
}

std::string Trainer::kept_checkpoint_note() const {
  const std::string latest = run_directory_.find_latest_checkpoint();
  return latest.empty() ? "no checkpoint was written before it"
                        : "the last good checkpoint, " + latest + ", is kept";
}

void Trainer::on_nonfinite_gradients() {
  const std::int64_t step = position_.global_step + 1;
  const NonFiniteFinding finding = nonfinite_guard_->describe_gradients(model_->registry());
  char rate[64];
  std::snprintf(rate, sizeof(rate), "%g", schedule_->learning_rate(schedule_step(position_)));
  const std::string what = "step " + std::to_string(step) +
                           ": the loss or its gradients are not finite; the first layer in backward order "
                           "with non-finite gradients: " +
                           describe(finding);
  if (nonfinite_guard_->policy() == NonFinitePolicy::Stop)
    throw NonFiniteStop(what + "; stopped before the update (train.nonfinite: stop), learning rate " + rate +
                        " (optimizer.learning_rate too high?); " + kept_checkpoint_note());
  progress_->line(what + "; update skipped on every rank (train.nonfinite: skip), " +
                  std::to_string(skipped_updates() + 1) + " skipped so far");
}

void Trainer::require_finite_state(const std::string& checkpoint_path) {
  std::vector<const Tensor*> states;
  if (optimizer_)
    for (const auto& name : optimizer_->state_names()) states.push_back(&optimizer_->state(name));
  const auto finding = nonfinite_guard_->find_nonfinite_state(model_->registry(), states);
  if (!finding) return;
  throw NonFiniteStop("step " + std::to_string(position_.global_step) +
                      ": the weights are not finite after the update (" + describe(*finding) +
                      "), so the checkpoint " + checkpoint_path +
                      " is not written (optimizer.learning_rate too high?); " + kept_checkpoint_note());
}

std::unique_ptr<MicroBatches> Trainer::make_micro_batches(int local_batch) const {
  const auto& config = options_.config;
  const int count = micro_batches_per_step(config, local_batch);
  if (count < 2) return nullptr;
  // The micro-batches slice the input batch by fp32 sample sizes and sum the fp32 parameter
  // gradients with the backend's add, which under reduced activations reads 2-byte elements
  // (activation_dtype: auto chose fp32 for this rank already).
  PHALANX_REQUIRE_INPUT(
      arithmetic_.activation_dtype == "fp32", "train.activation_dtype: ", config.train.activation_dtype,
      " cannot be combined with gradient accumulation (", count, " micro-batches of a local batch of ",
      local_batch, ", train.accumulation_steps); use fp32 activations or one micro-batch per step");
  return std::make_unique<MicroBatches>(backend_, local_batch, count, model_->classes(),
                                        model_->registry().parameter_count(), communicator_.size());
}

std::int64_t Trainer::schedule_step(const TrainingPosition& position) const {
  return position.epoch * steps_per_epoch_ + position.step_in_epoch;
}

bool Trainer::advance_position(const BatchFacts& batch, std::int64_t global_batch) {
  buffers_synchronised_ = false;
  ++position_.global_step;
  position_.samples_seen += global_batch;
  position_.epoch = batch.epoch;
  position_.step_in_epoch = batch.step + 1;
  if (position_.step_in_epoch < steps_per_epoch_) return false;
  position_.epoch += 1;
  position_.step_in_epoch = 0;
  return true;
}

void Trainer::evaluate_partial_epoch(double epoch_seconds, const RunningTotals& totals) {
  close_metrics_interval(epoch_seconds);  // the partial epoch's machine metrics
  synchronise_buffers();
  const auto result = evaluate(*model_, *test_split_, dataset_info_.mean, dataset_info_.standard_deviation,
                               communicator_, evaluation_batch);
  double loss_sum[2] = {totals.epoch_loss_sum, static_cast<double>(totals.epoch_samples)};
  communicator_.allreduce_sum(loss_sum, 2);
  last_evaluation_ = {{"test_accuracy", result.accuracy},
                      {"test_loss", result.loss},
                      {"train_loss", loss_sum[1] > 0 ? loss_sum[0] / loss_sum[1] : 0.0}};
  run_directory_.append_metrics({{"event", "eval"},
                                 {"step", position_.global_step},
                                 {"epoch", position_.epoch},
                                 {"test_accuracy", result.accuracy},
                                 {"test_loss", result.loss},
                                 {"time", wall_seconds_since_epoch() - start_wall_}});
}

nlohmann::json Trainer::write_summary(const TrainingRecord& record, std::int64_t global_batch,
                                      int local_batch) {
  const auto& config = options_.config;
  // Throughput over all ranks: every rank runs the same number of steps in lockstep.
  const double local_rate =
      record.measured_seconds > 0
          ? static_cast<double>(record.measured_steps * local_batch) / record.measured_seconds
          : 0.0;
  double slowest_seconds = record.measured_seconds;
  communicator_.allreduce_max(&slowest_seconds, 1);
  const double overall_rate =
      slowest_seconds > 0 ? static_cast<double>(record.measured_steps * global_batch) / slowest_seconds : 0.0;

  nlohmann::json rank_entry = {
      {"rank", communicator_.rank()}, {"host", communicator_.host_name()},
      {"device", backend_.name()},    {"threads", options_.threads},
      {"images_per_sec", local_rate}, {"time_breakdown", record.run_times.to_json(record.run_steps)},
      {"local_batch", local_batch},   {"micro_batches", micro_batch_count_}};
  rank_entry["step_time_ms"] = record.step_statistics.to_json();
  for (const auto& [name, value] : run_metrics_) rank_entry["machine"][name] = value;
  const auto rank_entries = communicator_.gather_strings(rank_entry.dump(), 0);

  nlohmann::json summary = last_evaluation_;
  summary["epochs"] = static_cast<double>(schedule_step(position_)) / static_cast<double>(steps_per_epoch_);
  summary["steps"] = position_.global_step;
  summary["global_batch"] = global_batch;
  BatchSplit split = options_.batch_split;
  if (split.local_batches.empty()) {
    split.method = "equal";
    split.local_batches = local_batches_;
  }
  summary["batch_split"] = split.to_json();
  summary["world_size"] = communicator_.size();
  summary["version"] = build_information();
  summary["images_per_sec"] = overall_rate;
  summary["wall_seconds"] = wall_seconds_since_epoch() - start_wall_;
  summary["time_breakdown"] = record.run_times.to_json(record.run_steps);
  summary["ranks"] = nlohmann::json::array();
  for (const auto& entry : rank_entries) summary["ranks"].push_back(nlohmann::json::parse(entry));
  summary["step_time_skew"] = step_time_skew(summary["ranks"]);
  summary["history"] = history_;
  for (const auto& [name, value] : run_metrics_) summary["machine"][name] = value;
  // Wall seconds from the start of the run to the first evaluation at or above each accuracy.
  nlohmann::json to_accuracy = nlohmann::json::object();
  for (const double threshold : {0.85, 0.90, 0.91, 0.92, 0.93})
    for (const auto& entry : history_)
      if (entry["test_accuracy"].get<double>() >= threshold) {
        char key[16];
        std::snprintf(key, sizeof(key), "%.2f", threshold);
        to_accuracy[key] = entry["elapsed_seconds"];
        break;
      }
  summary["seconds_to_accuracy"] = to_accuracy;
  summary["run_dir"] = run_directory_.path();
  summary["dataset"] = data::source_name(config.data);  // data.path, or the mapped training images
  summary["parameters"] = model_->registry().parameter_count();
  if (!resumed_from_.empty()) summary["resumed_from"] = resumed_from_;
  if (resumed_elastic_.is_object()) summary["elastic"] = resumed_elastic_;
  if (loss_scaler_)
    summary["loss_scaling"] = {{"final_scale", loss_scaler_->scale()},
                               {"skipped_steps", loss_scaler_->state().skipped_steps}};
  else if (nonfinite_guard_->policy() == NonFinitePolicy::Skip)
    summary["nonfinite_skipped_steps"] = nonfinite_guard_->skipped_steps();
  run_directory_.write_summary(summary);
  if (communicator_.rank() == 0) write_report(*progress_);

  char text[256];
  std::snprintf(text, sizeof(text), "test accuracy %.4f  test loss %.4f  (%.0f img/s over %d ranks, %.1f s)",
                summary.value("test_accuracy", 0.0), summary.value("test_loss", 0.0), overall_rate,
                communicator_.size(), summary["wall_seconds"].get<double>());
  progress_->line(text);
  progress_->line("run directory: " + run_directory_.path());
  return summary;
}

void Trainer::write_report(Progress& progress) {
  // The report is a view of files already safely written: a failure to draw it must not turn a
  // finished run into a failed one.
  try {
    report::write_run_report(run_directory_.path());
  } catch (const std::exception& error) {
    progress.line(std::string("report.html not written: ") + error.what());
  }
}

void Trainer::broadcast_from_root(Tensor& tensor) {
  // MPI sees host memory only (no CUDA-aware MPI assumed): stage through a host copy.
  std::vector<float> host(static_cast<std::size_t>(tensor.elements()));
  backend_.copy_to_host(host.data(), tensor.data(), tensor.bytes());
  communicator_.broadcast(host.data(), tensor.bytes(), 0);
  backend_.copy_from_host(tensor.data(), host.data(), tensor.bytes());
}

void Trainer::synchronise_buffers() {
  // Averaging is not idempotent in float at every world size ((a+a+a)/3 != a), so average only
  // what training changed since the last time: resumed and straight runs then agree bitwise.
  if (buffers_synchronised_) return;
  average_buffers(*model_, communicator_);
  buffers_synchronised_ = true;
}

std::vector<std::pair<std::string, double>> Trainer::close_metrics_interval(double seconds) {
  std::vector<std::pair<std::string, double>> fields = host_sampler_->end_interval().fields();
  if (gpu_sampler_)
    for (auto& field : gpu_sampler_->end_interval().fields()) fields.push_back(std::move(field));
  // Run totals: peaks take the maximum, energy and sample counts add up, the rest (means) are
  // weighted by the interval's length.
  for (const auto& [name, value] : fields) {
    double& total = run_metrics_[name];
    if (name.find("_peak_") != std::string::npos || name.find("high_water") != std::string::npos ||
        name.find("_total_") != std::string::npos)
      total = std::max(total, value);
    else if (name.find("energy") != std::string::npos || name.find("sample_count") != std::string::npos)
      total += value;
    else
      total =
          (total * run_metrics_seconds_ + value * seconds) / std::max(run_metrics_seconds_ + seconds, 1e-9);
  }
  run_metrics_seconds_ += seconds;
  return fields;
}

void Trainer::end_of_epoch(std::int64_t epoch, const TrainingRecord& record, const RunningTotals& totals) {
  const double epoch_seconds = record.epoch_clock.seconds();
  const StageTimes& epoch_times = record.epoch_times;
  const std::int64_t epoch_steps = record.epoch_steps;
  run_control_->enter("evaluation", position_.global_step, comm::StageKind::Collective);
  // The epoch's machine metrics end before evaluation, so they describe training.
  const auto machine_metrics = close_metrics_interval(epoch_seconds);
  synchronise_buffers();
  const auto result = evaluate(*model_, *test_split_, dataset_info_.mean, dataset_info_.standard_deviation,
                               communicator_, evaluation_batch);
  double sums[2] = {totals.epoch_loss_sum, static_cast<double>(totals.epoch_samples)};
  communicator_.allreduce_sum(sums, 2);
  const double train_loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
  last_evaluation_ = {
      {"test_accuracy", result.accuracy}, {"test_loss", result.loss}, {"train_loss", train_loss}};
  const double images_per_sec = epoch_seconds > 0 ? static_cast<double>(epoch_steps) *
                                                        static_cast<double>(global_batch_) / epoch_seconds
                                                  : 0.0;
  const double elapsed = wall_seconds_since_epoch() - start_wall_;
  history_.push_back({{"epoch", epoch + 1},
                      {"elapsed_seconds", elapsed},
                      {"test_accuracy", result.accuracy},
                      {"test_loss", result.loss},
                      {"train_loss", train_loss},
                      {"epoch_seconds", epoch_seconds},
                      {"eval_seconds", result.seconds}});
  nlohmann::json epoch_event = {{"event", "epoch"},
                                {"epoch", epoch + 1},
                                {"step", position_.global_step},
                                {"train_loss", train_loss},
                                {"seconds", epoch_seconds},
                                {"time", elapsed},
                                {"images_per_sec", images_per_sec},
                                {"time_breakdown", epoch_times.to_json(epoch_steps)}};
  for (const auto& [name, value] : machine_metrics) epoch_event["machine"][name] = value;
  run_directory_.append_metrics(epoch_event);
  run_directory_.append_metrics({{"event", "eval"},
                                 {"epoch", epoch + 1},
                                 {"step", position_.global_step},
                                 {"test_accuracy", result.accuracy},
                                 {"test_loss", result.loss},
                                 {"seconds", result.seconds},
                                 {"time", elapsed}});
  if (communicator_.rank() == 0) {
    const auto json = epoch_times.to_json(epoch_steps);
    char text[512];
    std::snprintf(
        text, sizeof(text),
        "epoch %lld: train loss %.4f  test loss %.4f  test accuracy %.4f  (%.1f s, %.0f img/s; per step: "
        "data %.1f ms, forward %.1f, backward %.1f, all-reduce wait %.1f, optimizer %.1f)",
        static_cast<long long>(epoch + 1), train_loss, result.loss, result.accuracy, epoch_seconds,
        images_per_sec, json["data_wait"]["ms_per_step"].get<double>(),
        json["forward"]["ms_per_step"].get<double>(), json["backward"]["ms_per_step"].get<double>(),
        json["allreduce_wait"]["ms_per_step"].get<double>(), json["optimizer"]["ms_per_step"].get<double>());
    progress_->line(text);
  }
  print_breakdown_table(epoch_times.to_json(epoch_steps));
}

void Trainer::print_breakdown_table(const nlohmann::json& breakdown) {
  // Collective: every rank's breakdown of the epoch, one row each, printed by rank 0.
  const auto gathered = communicator_.gather_strings(breakdown.dump(), 0);
  if (communicator_.rank() != 0) return;
  std::vector<nlohmann::json> breakdowns;
  for (const auto& text : gathered) breakdowns.push_back(nlohmann::json::parse(text));
  progress_->line("time per step by rank (ms):\n" + breakdown_table(breakdowns));
}

void Trainer::stop_on_signal(const RunningTotals& totals) {
  const auto every_steps = options_.config.checkpoint.every_steps;
  if (every_steps <= 0 || position_.global_step % every_steps != 0)
    save_checkpoint(CheckpointKind::Periodic, totals);
  run_control_->report_stop(position_.global_step, run_directory_.checkpoint_path(position_.global_step),
                            run_directory_, *progress_);
  // All ranks leave together, after the checkpoint: a launcher that tears the job down when the
  // first rank exits must not kill rank 0 while it writes.
  run_control_->enter("stop checkpoint", position_.global_step, comm::StageKind::Collective);
  communicator_.barrier();
  if (run_control_->stopped_for_handover())
    stopped_for_handover_ = true;
  else
    stopped_by_signal_ = true;
}

void Trainer::save_checkpoint(CheckpointKind kind, const RunningTotals& totals) {
  const bool final = kind == CheckpointKind::Final;
  synchronise_buffers();
  const std::string path =
      final ? run_directory_.latest_checkpoint_path() : run_directory_.checkpoint_path(position_.global_step);
  // Every rank holds the same weights, so every rank stops here together, without a collective.
  require_finite_state(path);
  const auto every_rank_totals = gather_running_totals(communicator_, totals);
  if (communicator_.rank() == 0) {
    write_checkpoint(path, backend_, model_->registry(), optimizer_.get(), position_, communicator_.size(),
                     options_.config.seed, options_.config_text,
                     loss_scaler_ ? &loss_scaler_->state() : nullptr, local_batches_, every_rank_totals,
                     learning_rate_ != options_.config.optimizer.learning_rate ? learning_rate_ : 0.0,
                     loss_scaler_ ? 0 : nonfinite_guard_->skipped_steps());
    if (!final) run_directory_.prune_checkpoints(options_.config.checkpoint.keep);
  }
}

}  // namespace phalanx::train
