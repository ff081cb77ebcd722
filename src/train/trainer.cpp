// The training loop. run() reads top to bottom as DESIGN §1 draws it: wait for data, forward,
// loss, backward with overlapped gradient all-reduce, optimizer, then the per-step bookkeeping.
#include "phalanx/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/comm/grad_sync.hpp"
#include "phalanx/comm/nccl_grad_sync.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/data/data_source.hpp"
#include "phalanx/data/loader.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "phalanx/data/source_statistics.hpp"
#include "phalanx/data/training_source.hpp"
#include "phalanx/report/run_report.hpp"
#include "phalanx/train/arithmetic_setup.hpp"
#include "phalanx/train/backend_host_staging.hpp"
#include "phalanx/train/breakdown_table.hpp"
#include "phalanx/train/build_information.hpp"
#include "phalanx/train/device_stage_timer.hpp"
#include "phalanx/train/evaluation.hpp"
#include "phalanx/train/input_batch.hpp"
#include "phalanx/train/progress.hpp"
#include "phalanx/train/run_control.hpp"
#include "phalanx/train/step_time_statistics.hpp"
#include "phalanx/train/trace_recorder.hpp"

namespace phalanx::train {

namespace {
constexpr int throughput_warmup_steps = 3;  // first steps build primitive caches; throughput skips them
constexpr int evaluation_batch = 256;
}  // namespace

void StageTimes::add(const StageTimes& step) {
  data_wait += step.data_wait;
  forward += step.forward;
  backward += step.backward;
  allreduce_wait += step.allreduce_wait;
  optimizer += step.optimizer;
  sync_wait += step.sync_wait;
  other += step.other;
  total += step.total;
  host_to_device += step.host_to_device;
  allreduce_total += step.allreduce_total;
  host_to_device_total += step.host_to_device_total;
  host_to_device_bytes += step.host_to_device_bytes;
}

nlohmann::json StageTimes::to_json(std::int64_t steps) const {
  const double count = static_cast<double>(std::max<std::int64_t>(steps, 1));
  const double whole = total > 0 ? total : 1.0;
  nlohmann::json result;
  const std::pair<const char*, double> stages[] = {
      {"data_wait", data_wait}, {"forward", forward},
      {"backward", backward},   {"allreduce_wait", allreduce_wait},
      {"optimizer", optimizer}, {"sync_wait", sync_wait},
      {"other", other}};
  for (const auto& [name, seconds] : stages)
    result[name] = {{"ms_per_step", 1000.0 * seconds / count}, {"share", seconds / whole}};
  result["host_to_device"] = {{"ms_per_step", 1000.0 * host_to_device / count},
                              {"share", host_to_device / whole}};
  // The copy's whole time and how much of it hid behind compute (GPU ranks; 0 on CPU ranks).
  result["host_to_device_total"] = {
      {"ms_per_step", 1000.0 * host_to_device_total / count},
      {"hidden_share", host_to_device_total > 0 ? 1.0 - host_to_device / host_to_device_total : 0.0},
      {"bytes_per_step", host_to_device_bytes / count}};
  result["allreduce_total"] = {
      {"ms_per_step", 1000.0 * allreduce_total / count},
      {"exposed_share", allreduce_total > 0 ? allreduce_wait / allreduce_total : 0.0}};
  result["step_ms"] = 1000.0 * total / count;
  result["steps"] = steps;
  return result;
}

Trainer::Trainer(TrainerOptions options, const comm::Communicator& communicator, backend::Backend& backend)
    : options_(std::move(options)), communicator_(communicator), backend_(backend) {
  const auto& config = options_.config;
  apply_arithmetic(config, backend_);
  dataset_info_ = data::describe_dataset(config.data, options_.run_directory, communicator_);
  train_split_ = data::open_training_source(config.data, communicator_);
  test_split_ = std::make_shared<const data::Split>(
      read_evaluation_part(config.data, config.data.test_split, communicator_));
  const Shape sample{train_split_->height, train_split_->width, train_split_->channels};
  model_ = std::make_unique<nn::Model>(config.model, sample, static_cast<int>(dataset_info_.classes.size()),
                                       backend_, config.seed);
  optimizer_ = optim::make_optimizer(config.optimizer, backend_, model_->registry().parameter_count());
  if (config.train.loss_scale == "dynamic" ||
      (config.train.loss_scale == "auto" && config.train.precision == "fp16"))
    loss_scaler_ = std::make_unique<optim::LossScaler>(config.train.loss_scale_initial);
  PHALANX_REQUIRE_INPUT(config.distributed.grad_dtype == "fp32" || options_.nccl != nullptr,
                        "distributed.grad_dtype: ", config.distributed.grad_dtype,
                        " compresses the NCCL all-reduce of jobs whose ranks all drive a GPU; this job sums "
                        "gradients with MPI on host memory (use fp32)");
  local_batches_ = options_.batch_split.local_batches;
  if (local_batches_.empty())
    local_batches_.assign(static_cast<std::size_t>(communicator_.size()), config.train.batch_size);
  PHALANX_CHECK(static_cast<int>(local_batches_.size()) == communicator_.size(), local_batches_.size(),
                " local batches for ", communicator_.size(), " ranks");
  global_batch_ = std::accumulate(local_batches_.begin(), local_batches_.end(), std::int64_t{0});
  PHALANX_REQUIRE_INPUT(train_split_->count >= global_batch_, data::source_name(config.data), ": split '",
                        config.data.train_split, "' has ", train_split_->count,
                        " samples, fewer than one global batch of ", global_batch_, " (",
                        options_.batch_split.local_batches.empty()
                            ? "train.batch_size " + std::to_string(config.train.batch_size) + " x " +
                                  std::to_string(communicator_.size()) + " ranks"
                            : "local batches " + options_.batch_split.description(),
                        "): lower the batch size or use more data");
  const data::ShardPlan plan(train_split_->count, local_batches_, communicator_.rank(), config.seed);
  steps_per_epoch_ = plan.steps_per_epoch();
  schedule_ = std::make_unique<optim::Schedule>(config.schedule, config.optimizer.learning_rate,
                                                steps_per_epoch_, steps_per_epoch_ * config.train.epochs);

  // The CLI resolves --resume auto on rank 0 and hands every rank the same path.
  const std::string checkpoint = options_.resume == "auto"
                                     ? RunDirectory(options_.run_directory, false).find_latest_checkpoint()
                                     : options_.resume;
  if (!checkpoint.empty()) {
    const auto header = read_checkpoint_header(checkpoint);
    require_resumable(checkpoint, header);
    PHALANX_REQUIRE_INPUT(header.world_size == communicator_.size(), checkpoint, ": written by ",
                          header.world_size, " ranks; resume it with the same number of ranks (now ",
                          communicator_.size(), ") so the data order continues exactly");
    PHALANX_REQUIRE_INPUT(header.local_batches.empty() || header.local_batches == local_batches_, checkpoint,
                          ": trained with another batch split than this run's (", local_batches_.size(),
                          " ranks, global batch ", global_batch_,
                          "); a resumed run keeps the split it was trained with");
    load_checkpoint(checkpoint, backend_, model_->registry(), optimizer_.get());
    if (loss_scaler_ && header.loss_scale) loss_scaler_->restore(*header.loss_scale);
    position_ = header.position;
    if (!header.running_totals.empty()) resumed_totals_ = header.running_totals[communicator_.rank()];
    resumed_from_ = checkpoint;
  }
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
  config.train.log_every_steps = 1;
  config.checkpoint = {};
  config.distributed = {};
  config.trace = {};
  return config;
}
}  // namespace

void Trainer::require_resumable(const std::string& checkpoint, const CheckpointHeader& header) const {
  PHALANX_REQUIRE_INPUT(header.world_size == communicator_.size(), checkpoint, ": written by ",
                        header.world_size, " ranks; resume it with the same number of ranks (now ",
                        communicator_.size(), ") so the data order continues exactly");
  const auto written = config::parse(header.config_text, checkpoint + ":/config");
  const std::string before = config::to_yaml(trajectory_settings(written));
  const std::string now = config::to_yaml(trajectory_settings(options_.config));
  PHALANX_REQUIRE_INPUT(before == now, checkpoint,
                        ": cannot resume with a different seed, model, optimizer, "
                        "schedule, batch size or training split: ",
                        config::first_difference(now, before, "in the checkpoint"),
                        " (epochs, max_steps and checkpoint settings may change)");
  PHALANX_REQUIRE_INPUT(header.position.step_in_epoch < steps_per_epoch_, checkpoint, ": resumes at step ",
                        header.position.step_in_epoch, " of an epoch, but this data gives ", steps_per_epoch_,
                        " steps per epoch (is it the same dataset?)");
}

nlohmann::json Trainer::run() {
  const auto& config = options_.config;
  const bool leader = communicator_.rank() == 0;
  start_wall_ = wall_seconds_since_epoch();
  const double start_wall = start_wall_;
  run_directory_ = RunDirectory(options_.run_directory, leader, !resumed_from_.empty());
  run_directory_.start_session(position_.global_step + 1, resumed_from_);
  run_directory_.write_config(options_.config_text);
  run_control_ =
      std::make_unique<RunControl>(communicator_, options_.run_directory, config.distributed.timeout_s);
  progress_ = std::make_unique<Progress>(leader && !options_.quiet, config.train.log_every_steps);
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
  auto& registry = model_->registry();
  broadcast_from_root(registry.parameters());
  broadcast_from_root(registry.buffers());

  const auto rank_lines = communicator_.gather_strings(
      "rank " + std::to_string(communicator_.rank()) + ", host " + communicator_.host_name() + ", device " +
          backend_.name() + ", threads " + std::to_string(options_.threads),
      0);
  for (const auto& line : rank_lines) progress.line(line);
  progress.line(model_->summary() + "; " + std::to_string(train_split_->count) +
                " training images, global batch " + std::to_string(global_batch_) + ", " +
                std::to_string(steps_per_epoch_) + " steps per epoch");
  if (!options_.batch_split.local_batches.empty())
    progress.line("batch split: " + options_.batch_split.description() +
                  (options_.batch_split.stored_in.empty()
                       ? std::string()
                       : " (as stored in " + options_.batch_split.stored_in + ")"));
  progress.line("data cache: " + train_split_->cache_description);
  if (!resumed_from_.empty())
    progress.line("resumed from " + resumed_from_ + " at epoch " + std::to_string(position_.epoch + 1) +
                  ", step " + std::to_string(position_.step_in_epoch));

  // Gradient all-reduce: NCCL on the device when every rank has a GPU; otherwise MPI, which
  // reads host memory only, so a GPU rank in a mixed job stages each bucket through a host copy
  // as backward finishes it (comm::HostStaging), and MPI still overlaps the rest of backward.
  const std::size_t bucket_bytes = static_cast<std::size_t>(config.distributed.bucket_mb * 1024 * 1024);
  const bool use_nccl = options_.nccl != nullptr;
  const bool staged = !use_nccl && backend_.device_kind() != DeviceKind::Cpu;
  std::optional<comm::GradSync> grad_sync;
  std::optional<comm::NcclGradSync> nccl_sync;
  if (use_nccl)
    nccl_sync.emplace(
        *options_.nccl, registry.gradients().data(), registry.parameter_count(), bucket_bytes,
        std::size_t{1} << 20,
        config.distributed.grad_dtype == "bf16" ? comm::WireType::BFloat16 : comm::WireType::Float32, true);
  else if (staged)
    grad_sync.emplace(communicator_, registry.gradients().data(), registry.parameter_count(), bucket_bytes,
                      std::make_unique<BackendHostStaging>(backend_));
  else
    grad_sync.emplace(communicator_, registry.gradients().data(), registry.parameter_count(), bucket_bytes);
  const data::ShardPlan plan(train_split_->count, local_batches_, communicator_.rank(), config.seed,
                             train_split_->order());
  // Training batches only: evaluation reads the split directly and never augments.
  const config::AugmentConfig& augment = config.data.augment;
  const data::AugmentOptions augment_options{augment.random_crop_padding, augment.horizontal_flip,
                                             augment.cutout};
  // GPU ranks leave augmentation to the input kernel (same draws, same bits) and fill a pinned ring.
  const bool augment_on_device = backend_.device_kind() == DeviceKind::Cuda;
  data::Loader loader(train_split_, plan, config.data.prefetch_batches, position_.epoch,
                      position_.step_in_epoch, config.train.epochs, backend_.staging_allocator(),
                      augment_options, augment_on_device);

  const int local_batch = plan.local_batch();
  InputBatch inputs(backend_, local_batch, train_split_->height, train_split_->width, train_split_->channels,
                    dataset_info_.mean, dataset_info_.standard_deviation);
  Tensor grad_logits(backend_, Shape{local_batch, model_->classes()});
  const float gradient_scale = 1.0f / static_cast<float>(plan.global_batch());
  const std::int64_t total_steps = steps_per_epoch_ * config.train.epochs;
  const std::int64_t last_step =
      config.train.max_steps ? std::min(*config.train.max_steps, total_steps) : total_steps;

  StageTimes run_times, epoch_times;
  std::int64_t run_steps = 0, epoch_steps = 0, measured_steps = 0;
  double measured_seconds = 0, epoch_loss_sum = 0, interval_loss = 0;
  std::int64_t epoch_loss_samples = 0, interval_samples = 0, interval_correct = 0;
  // A resumed run continues the epoch's and the log interval's sums where the checkpoint left them.
  if (resumed_totals_) {
    epoch_loss_sum = resumed_totals_->epoch_loss_sum;
    epoch_loss_samples = resumed_totals_->epoch_samples;
    interval_loss = resumed_totals_->interval_loss_sum;
    interval_correct = resumed_totals_->interval_correct;
    interval_samples = resumed_totals_->interval_samples;
  } else if (!resumed_from_.empty() &&
             (position_.step_in_epoch > 0 || position_.global_step % config.train.log_every_steps != 0)) {
    progress.line("the checkpoint holds no running loss totals (written by an earlier version): epoch " +
                  std::to_string(position_.epoch + 1) +
                  "'s train_loss and the next step event's loss count the steps after the resume only");
  }
  const auto running_totals = [&] {
    return RunningTotals{epoch_loss_sum, epoch_loss_samples, interval_loss, interval_correct,
                         interval_samples};
  };
  Stopwatch epoch_clock;
  bool evaluated_at_end = false;
  // Observability: step-time percentiles of this rank, and a timeline of sampled steps after warm-up.
  StepTimeStatistics step_statistics;
  TraceRecorder trace(throughput_warmup_steps, config.trace.steps);
  // GPU ranks fetch batch k+1 and start its upload on the copy stream while step k's backward
  // runs, so the copy hides behind compute; CPU ranks (whose device memory is host memory) fetch
  // and copy each batch at the top of its step. What a step needs of its batch once the loader
  // may have reused the batch's memory:
  const bool overlap_upload = backend_.device_kind() == DeviceKind::Cuda;
  struct BatchFacts {
    std::int64_t epoch = 0, step = 0;
    double produce_begin = 0, produce_end = 0;
  };
  const auto facts_of = [](const data::Batch& batch) {
    return BatchFacts{batch.epoch, batch.step, batch.produce_begin, batch.produce_end};
  };
  std::optional<BatchFacts> uploading;  // the next batch, its upload in flight (GPU ranks)
  // Adds the loss totals of the steps since the last take, step by step in order, so the sums are
  // the same bits whenever they are taken.
  double last_step_loss = 0;
  // A backend that served an earlier run in this process (a sweep's trials) may still hold the
  // totals of steps that run never took (it ended with an error): they are not this run's.
  (void)backend_.take_deferred_loss_totals();
  const auto take_loss_totals = [&] {
    for (const backend::LossTotals& totals : backend_.take_deferred_loss_totals()) {
      epoch_loss_sum += totals.loss_sum;
      interval_loss += totals.loss_sum;
      interval_correct += totals.correct;
      last_step_loss = totals.loss_sum / local_batch;
    }
  };
  // GPU ranks that sum gradients with NCCL time their stages on the device and settle a step's
  // times a step later (DeviceStageTimer), so no step waits for the device to measure itself;
  // CPU ranks, and GPU ranks that stage gradients through host memory, time each stage on the host.
  std::optional<DeviceStageTimer> device_timer;
  if (use_nccl) device_timer.emplace(backend_);
  struct UnsettledStep {
    StageTimes times;  // host-measured parts (data, total, input copy); the rest comes from the device
    std::int64_t run_step = 0, global_step = 0;
    double start = 0, produce_begin = 0, produce_end = 0;
    bool communication_read = false;
  };
  std::optional<UnsettledStep> unsettled;
  // The exposed all-reduce last read: the step before's, whether read once this step's optimizer
  // was queued or already at that step's own end (a log line, an epoch's end settled it there).
  double previous_allreduce_wait = 0;
  const auto read_communication = [&](UnsettledStep& held, const comm::CommunicationSeconds& seconds) {
    held.times.allreduce_wait = seconds.exposed;
    previous_allreduce_wait = held.times.allreduce_wait;
    held.times.allreduce_total = seconds.total;
    held.communication_read = true;
  };
  // Before a wait for the device without a bound (a take, the markers): the held step's all-reduce
  // is waited for with NCCL's error state polled, so a stuck peer ends in an error, not a hang.
  const auto read_held_communication = [&] {
    if (unsettled && !unsettled->communication_read)
      read_communication(*unsettled, nccl_sync->read_current());
  };
  const auto settle = [&](const DeviceStageSeconds& device) {
    UnsettledStep& held = *unsettled;
    if (!held.communication_read) read_communication(held, nccl_sync->read_current());
    StageTimes& step = held.times;
    step.forward = std::max(0.0, device.forward - step.host_to_device);
    step.backward = device.backward;
    // The optimizer's device time began with the wait for the all-reduce's exposed tail.
    step.optimizer = std::max(0.0, device.optimizer - step.allreduce_wait);
    step.other = std::max(0.0, step.total - step.data_wait - step.host_to_device - step.forward -
                                   step.backward - step.allreduce_wait - step.optimizer - step.sync_wait);
    run_times.add(step);
    epoch_times.add(step);
    if (trace.sampled(held.run_step))
      trace.record({held.global_step, held.start, step.data_wait, step.host_to_device, step.forward,
                    step.backward, step.allreduce_wait, step.optimizer, step.sync_wait, step.allreduce_total,
                    held.produce_begin, held.produce_end});
    unsettled.reset();
  };

  while (position_.global_step < last_step) {
    StageTimes step;
    const double step_start = steady_seconds();
    Stopwatch step_clock, stage_clock;
    run_control_->enter("forward and backward", position_.global_step + 1, comm::StageKind::Local);

    // 1. data: the loader thread has (usually) prepared this batch already; on a GPU rank it was
    // fetched, and its upload started, during the previous step.
    BatchFacts batch;
    if (uploading) {
      batch = *uploading;
      uploading.reset();
    } else {
      const data::Batch* fetched = loader.next();
      if (!fetched) break;
      step.data_wait = stage_clock.seconds();
      stage_clock.restart();
      batch = facts_of(*fetched);
      inputs.start_upload(*fetched);  // CPU ranks: the copy itself
    }

    // 2. host to device (the compute work waits for the upload: on a GPU by event, its cost comes
    // from the events below), then forward and loss.
    if (device_timer) device_timer->mark(StageBoundary::Begin);
    inputs.prepare(augment.cutout);
    step.host_to_device = stage_clock.seconds();
    stage_clock.restart();
    const Tensor& input = inputs.input();
    nn::ForwardContext context{nn::Mode::Training, config.seed, position_.global_step, communicator_.rank()};
    const Tensor& logits = model_->forward(input, context);
    const float loss_scale = loss_scaler_ ? static_cast<float>(loss_scaler_->scale()) : 1.0f;
    // The loss totals stay where they were computed until the bookkeeping below needs them.
    backend_.softmax_cross_entropy_deferred(local_batch, model_->classes(), logits.data(), inputs.labels(),
                                            static_cast<float>(config.train.label_smoothing),
                                            gradient_scale * loss_scale, grad_logits.data());
    if (device_timer) device_timer->mark(StageBoundary::ForwardEnd);
    step.forward = stage_clock.seconds();

    // 3. backward; each finished bucket of gradients starts its all-reduce right away.
    stage_clock.restart();
    if (use_nccl) {
      nccl_sync->begin_step();
      model_->backward(input, grad_logits, [&](std::int64_t offset) { nccl_sync->gradients_ready(offset); });
    } else {
      grad_sync->begin_step();
      model_->backward(input, grad_logits, [&](std::int64_t offset) { grad_sync->gradients_ready(offset); });
    }
    if (device_timer) device_timer->mark(StageBoundary::BackwardEnd);
    double fetch_seconds = 0;
    if (overlap_upload && position_.global_step + 1 < last_step) {
      // Backward is queued on the device: fetch the next batch and start its upload meanwhile.
      Stopwatch fetch_clock;
      inputs.wait_upload_host();  // this step's copy is done: the loader may reuse its host slot
      if (const data::Batch* fetched = loader.next()) {
        uploading = facts_of(*fetched);
        inputs.start_upload(*fetched);
      }
      fetch_seconds = fetch_clock.seconds();
    }
    // Device backends queue work: a stage timed on the host ends when the device is done.
    if (!device_timer) backend_.synchronize();
    step.backward = stage_clock.seconds() - fetch_seconds;
    step.data_wait += fetch_seconds;
    stage_clock.restart();
    run_control_->enter("gradient all-reduce", position_.global_step + 1, comm::StageKind::Collective);
    if (use_nccl) {
      nccl_sync->wait();  // orders the optimizer after the sums on the device; the host goes on
    } else {
      step.allreduce_wait = grad_sync->wait();
      step.allreduce_total = grad_sync->last_communication_seconds();
    }

    // 4. update (skipped when dynamic loss scaling finds an overflow in the summed gradients)
    run_control_->enter("optimizer", position_.global_step + 1, comm::StageKind::Local);
    stage_clock.restart();
    // The finite check waits for the summed gradients without a bound: a stuck peer is caught first.
    if (use_nccl && loss_scaler_) nccl_sync->wait_current();
    const bool update = !loss_scaler_ || loss_scaler_->unscale_or_skip(backend_, registry.gradients().data(),
                                                                       registry.parameter_count());
    // The optimizer counts the updates it made (AdamW's bias correction), as GradScaler's do.
    const std::int64_t updates =
        position_.global_step + 1 - (loss_scaler_ ? loss_scaler_->state().skipped_steps : 0);
    if (update) optimizer_->step(registry, schedule_->learning_rate(position_.global_step), updates);
    if (device_timer)
      device_timer->mark(StageBoundary::OptimizerEnd);  // NCCL's events time the all-reduce (settle)
    else
      backend_.synchronize();
    // The previous step's all-reduce, read now that this whole step is queued behind it: the host
    // waits (if at all) while the device has work, never in front of an empty queue.
    if (use_nccl && unsettled) read_communication(*unsettled, nccl_sync->read_previous());
    step.optimizer = stage_clock.seconds();
    // The input copy: on a GPU it ran on the copy stream, and CUDA events say how long it took and
    // how much of it the compute stream still waited for (that wait showed in the forward stage's
    // host time, which read the loss); the rest was hidden behind the previous step. On a CPU rank
    // the copy is the host time measured above, all of it exposed.
    const backend::UploadTiming upload = inputs.last_upload_timing();
    if (overlap_upload) {
      step.host_to_device = upload.exposed_seconds;
      step.forward = std::max(0.0, step.forward - upload.exposed_seconds);
    }
    step.host_to_device_total = std::max(upload.copy_seconds, step.host_to_device);
    step.host_to_device_bytes = static_cast<double>(upload.bytes);

    // 5. bookkeeping
    buffers_synchronised_ = false;
    ++position_.global_step;
    position_.samples_seen += plan.global_batch();
    position_.epoch = batch.epoch;
    position_.step_in_epoch = batch.step + 1;
    const bool epoch_done = position_.step_in_epoch == steps_per_epoch_;
    if (epoch_done) {
      position_.epoch += 1;
      position_.step_in_epoch = 0;
    }
    // Whether a stop signal (preemption) reached any rank: one small collective per step (and the
    // straggler report every log interval), so part of the step's time. Acted on below, after the
    // epoch's evaluation and the periodic checkpoint, unless this was the last step (finishing
    // costs less than a requeue).
    // The step's time waiting for the other ranks; a GPU rank knows its exposed all-reduce a step
    // late (device events), so it counts the previous step's (previous_allreduce_wait).
    const double waited_for_other_ranks = device_timer ? previous_allreduce_wait : step.allreduce_wait;
    // The first collective after the gradient all-reduce: a rank that left the all-reduce before a
    // slower peer (or whose peer was descheduled meanwhile) waits for it here, so its time is a
    // stage of its own (sync_wait), not `other`.
    stage_clock.restart();
    const bool stop_requested =
        position_.global_step < last_step &&
        run_control_->end_of_step(position_.global_step, step_clock.seconds() - waited_for_other_ranks,
                                  position_.global_step % config.train.log_every_steps == 0, run_directory_,
                                  progress);
    step.sync_wait = stage_clock.seconds();
    step.total = step_clock.seconds();
    if (device_timer) {
      // The step before has run to its end on the device meanwhile: settle it, hold this one.
      DeviceStageSeconds previous;
      if (unsettled && device_timer->read_previous(previous)) settle(previous);
      unsettled = UnsettledStep{step,       run_steps,           position_.global_step,
                                step_start, batch.produce_begin, batch.produce_end};
    } else {
      step.other = std::max(0.0, step.total - step.data_wait - step.host_to_device - step.forward -
                                     step.backward - step.allreduce_wait - step.optimizer - step.sync_wait);
      run_times.add(step);
      epoch_times.add(step);
    }
    ++run_steps;
    ++epoch_steps;
    if (run_steps > throughput_warmup_steps) {
      measured_seconds += step.total;
      ++measured_steps;
      step_statistics.add(step.total);
    }
    if (!device_timer && trace.sampled(run_steps - 1))
      trace.record({position_.global_step, step_start, step.data_wait, step.host_to_device, step.forward,
                    step.backward, step.allreduce_wait, step.optimizer, step.sync_wait, step.allreduce_total,
                    batch.produce_begin, batch.produce_end});
    epoch_loss_samples += local_batch;
    interval_samples += local_batch;
    // A GPU rank's totals come back (one wait) only where a line, a metrics event, an epoch's end
    // or a checkpoint reads them; a CPU rank's are host values already and are taken every step.
    const bool checkpoint_due =
        config.checkpoint.every_steps > 0 && position_.global_step % config.checkpoint.every_steps == 0;
    if (!overlap_upload || position_.global_step % config.train.log_every_steps == 0 || epoch_done ||
        (batch.step + 1) % config.train.log_every_steps == 0 || position_.global_step == last_step ||
        stop_requested || checkpoint_due) {
      read_held_communication();
      take_loss_totals();
      if (unsettled) settle(device_timer->read_current());  // the host waits for the device here anyway
    }

    const double step_average = run_times.total / static_cast<double>(std::max<std::int64_t>(run_steps, 1));
    ProgressState state{batch.epoch,
                        config.train.epochs,
                        batch.step,
                        steps_per_epoch_,
                        static_cast<double>(plan.global_batch()) / std::max(step.total, 1e-9),
                        last_step_loss,
                        step_average * static_cast<double>(last_step - position_.global_step)};
    progress.update(state);
    if (position_.global_step % config.train.log_every_steps == 0) {
      // Loss and accuracy of the interval over every rank's samples, weighted by sample counts
      // (local batches may differ between ranks).
      run_control_->enter("step metrics", position_.global_step, comm::StageKind::Collective);
      double interval[3] = {interval_loss, static_cast<double>(interval_correct),
                            static_cast<double>(interval_samples)};
      communicator_.allreduce_sum(interval, 3);
      nlohmann::json step_event = {{"event", "step"},
                                   {"step", position_.global_step},
                                   {"epoch", batch.epoch},
                                   {"loss", interval[0] / interval[2]},
                                   {"accuracy", interval[1] / interval[2]},
                                   {"learning_rate", schedule_->learning_rate(position_.global_step - 1)},
                                   {"images_per_sec", state.images_per_second},
                                   {"time", wall_seconds_since_epoch() - start_wall}};
      if (loss_scaler_) {
        step_event["loss_scale"] = loss_scaler_->scale();
        step_event["skipped_steps"] = loss_scaler_->state().skipped_steps;
      }
      run_directory_.append_metrics(step_event);
      interval_loss = 0;
      interval_samples = 0;
      interval_correct = 0;
    }
    if (epoch_done) {
      end_of_epoch(batch.epoch, epoch_clock.seconds(), epoch_times, epoch_steps, epoch_loss_sum,
                   epoch_loss_samples);
      evaluated_at_end = true;
      epoch_times = StageTimes{};
      epoch_steps = 0;
      epoch_loss_sum = 0;
      epoch_loss_samples = 0;
      epoch_clock.restart();
    } else {
      evaluated_at_end = false;
    }
    if (checkpoint_due) save_checkpoint(false, running_totals());
    // 6. a stop signal reached a rank: all stop here with a checkpoint.
    if (stop_requested) {
      stop_on_signal(running_totals());
      return {{"stopped_by_signal", true}, {"steps", position_.global_step}};
    }
  }
  run_control_->enter("final evaluation and summary", position_.global_step, comm::StageKind::Collective);
  read_held_communication();
  take_loss_totals();  // a run whose data ended early
  if (unsettled) settle(device_timer->read_current());

  // A run stopped mid-epoch (train.max_steps) still reports test metrics for what it trained.
  if (!evaluated_at_end) {
    close_metrics_interval(epoch_clock.seconds());  // the partial epoch's machine metrics
    synchronise_buffers();
    const auto result = evaluate(*model_, *test_split_, dataset_info_.mean, dataset_info_.standard_deviation,
                                 communicator_, evaluation_batch);
    double loss_sum[2] = {epoch_loss_sum, static_cast<double>(epoch_loss_samples)};
    communicator_.allreduce_sum(loss_sum, 2);
    last_evaluation_ = {{"test_accuracy", result.accuracy},
                        {"test_loss", result.loss},
                        {"train_loss", loss_sum[1] > 0 ? loss_sum[0] / loss_sum[1] : 0.0}};
    run_directory_.append_metrics({{"event", "eval"},
                                   {"step", position_.global_step},
                                   {"epoch", position_.epoch},
                                   {"test_accuracy", result.accuracy},
                                   {"test_loss", result.loss},
                                   {"time", wall_seconds_since_epoch() - start_wall}});
  }
  save_checkpoint(true, running_totals());
  trace.write_merged(communicator_, run_directory_.path() + "/trace.json",
                     "rank " + std::to_string(communicator_.rank()) + " (" + communicator_.host_name() +
                         ", " + backend_.name() + ")");

  // Throughput over all ranks: every rank runs the same number of steps in lockstep.
  const double local_rate =
      measured_seconds > 0 ? static_cast<double>(measured_steps * local_batch) / measured_seconds : 0.0;
  double slowest_seconds = measured_seconds;
  communicator_.allreduce_max(&slowest_seconds, 1);
  const double overall_rate =
      slowest_seconds > 0 ? static_cast<double>(measured_steps * plan.global_batch()) / slowest_seconds : 0.0;

  nlohmann::json rank_entry = {
      {"rank", communicator_.rank()}, {"host", communicator_.host_name()},
      {"device", backend_.name()},    {"threads", options_.threads},
      {"images_per_sec", local_rate}, {"time_breakdown", run_times.to_json(run_steps)}};
  rank_entry["step_time_ms"] = step_statistics.to_json();
  for (const auto& [name, value] : run_metrics_) rank_entry["machine"][name] = value;
  const auto rank_entries = communicator_.gather_strings(rank_entry.dump(), 0);

  nlohmann::json summary = last_evaluation_;
  summary["epochs"] = static_cast<double>(position_.global_step) / static_cast<double>(steps_per_epoch_);
  summary["steps"] = position_.global_step;
  summary["global_batch"] = plan.global_batch();
  BatchSplit split = options_.batch_split;
  if (split.local_batches.empty()) {
    split.method = "equal";
    split.local_batches = local_batches_;
  }
  summary["batch_split"] = split.to_json();
  summary["world_size"] = communicator_.size();
  summary["version"] = build_information();
  summary["images_per_sec"] = overall_rate;
  summary["wall_seconds"] = wall_seconds_since_epoch() - start_wall;
  summary["time_breakdown"] = run_times.to_json(run_steps);
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
  summary["dataset"] = config.data.path;
  summary["parameters"] = registry.parameter_count();
  if (!resumed_from_.empty()) summary["resumed_from"] = resumed_from_;
  if (loss_scaler_)
    summary["loss_scaling"] = {{"final_scale", loss_scaler_->scale()},
                               {"skipped_steps", loss_scaler_->state().skipped_steps}};
  run_directory_.write_summary(summary);
  if (leader) write_report(progress);

  char text[256];
  std::snprintf(text, sizeof(text), "test accuracy %.4f  test loss %.4f  (%.0f img/s over %d ranks, %.1f s)",
                summary.value("test_accuracy", 0.0), summary.value("test_loss", 0.0), overall_rate,
                communicator_.size(), summary["wall_seconds"].get<double>());
  progress.line(text);
  progress.line("run directory: " + run_directory_.path());
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

void Trainer::end_of_epoch(std::int64_t epoch, double epoch_seconds, const StageTimes& epoch_times,
                           std::int64_t epoch_steps, double loss_sum, std::int64_t loss_samples) {
  run_control_->enter("evaluation", position_.global_step, comm::StageKind::Collective);
  // The epoch's machine metrics end before evaluation, so they describe training.
  const auto machine_metrics = close_metrics_interval(epoch_seconds);
  synchronise_buffers();
  const auto result = evaluate(*model_, *test_split_, dataset_info_.mean, dataset_info_.standard_deviation,
                               communicator_, evaluation_batch);
  double sums[2] = {loss_sum, static_cast<double>(loss_samples)};
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
  if (every_steps <= 0 || position_.global_step % every_steps != 0) save_checkpoint(false, totals);
  run_control_->report_stop(position_.global_step, run_directory_.checkpoint_path(position_.global_step),
                            run_directory_, *progress_);
  // All ranks leave together, after the checkpoint: a launcher that tears the job down when the
  // first rank exits must not kill rank 0 while it writes.
  run_control_->enter("stop checkpoint", position_.global_step, comm::StageKind::Collective);
  communicator_.barrier();
  stopped_by_signal_ = true;
}

void Trainer::save_checkpoint(bool final, const RunningTotals& totals) {
  synchronise_buffers();
  const auto every_rank_totals = gather_running_totals(communicator_, totals);
  if (communicator_.rank() == 0) {
    const std::string path = final ? run_directory_.latest_checkpoint_path()
                                   : run_directory_.checkpoint_path(position_.global_step);
    write_checkpoint(path, backend_, model_->registry(), optimizer_.get(), position_, communicator_.size(),
                     options_.config.seed, options_.config_text,
                     loss_scaler_ ? &loss_scaler_->state() : nullptr, local_batches_, every_rank_totals);
    if (!final) run_directory_.prune_checkpoints(options_.config.checkpoint.keep);
  }
}

}  // namespace phalanx::train
