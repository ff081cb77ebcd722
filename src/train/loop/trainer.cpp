// The training loop. run() reads top to bottom as docs/DESIGN.md §1 draws it, and train_step() is
// one step: next batch, forward and loss, backward with the gradient exchange overlapped, the
// ranks' agreement, the update. What differs between ranks sits behind GradientExchange (MPI,
// NCCL, host-staged), StepClock (host or device timing) and InputPipeline (synchronous or uploaded
// during backward); gradient accumulation is the step itself, in micro-batches (one without it).
#include "loop/trainer.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <utility>

#include "loop/batch_mixing.hpp"
#include "loop/gradient_exchange.hpp"
#include "loop/input_pipeline.hpp"
#include "loop/micro_batches.hpp"
#include "loop/step_stages.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "phalanx/data/source_statistics.hpp"
#include "phalanx/train/nonfinite_stop.hpp"

namespace phalanx::train {
namespace {
constexpr int evaluation_batch = 256;
}  // namespace

struct Trainer::Step {
  data::ShardPlan plan;
  std::unique_ptr<GradientExchange> exchange;
  std::unique_ptr<InputPipeline> input;
  std::unique_ptr<StepClock> clock;
  std::unique_ptr<StepStages> stages;
  MicroBatches micro_batches;
  TrainingLoss loss;
  BatchMixing mixing;
  float gradient_scale;         // each sample's share of the step's summed gradient: 1 / global batch
  std::int64_t trained = 0;     // steps this process has trained
};

struct Trainer::Bookkeeping {
  StepCallbacks callbacks;  // in the order they act after a step
  TrainingRecord& record;
  TrainingLosses& losses;
  EpochEndCallback& epoch_end;
  StopSignalCallback& stop;
  TraceCallback& trace;
};

Trainer::Trainer(TrainingSetup setup, const comm::Communicator& communicator, backend::Backend& backend)
    : setup_(std::move(setup)), communicator_(communicator), backend_(backend), last_step_(setup_.last_step) {}

Trainer::~Trainer() = default;

nlohmann::json Trainer::run() {
  // A finished run resumed again (a requeued job, its command run twice): nothing is left to
  // train and its summary stands. Evaluating again would write a second evaluation of the same
  // step, and a summary without the training that this process did not do (its losses, its speed).
  // The summary must be of this very step: a sweep trial's summary of its previous rung is not.
  // A run that train.early_stop ended before its last step is finished too.
  const auto& early_stop = setup_.config.train.early_stop;
  const auto& stop_state = setup_.resumed_watches.early_stop;
  // Only the count of the metric watched now: a resume may change train.early_stop.metric, and
  // MetricWatch::restore then starts counting afresh.
  const bool stopped_early = early_stop && stop_state && stop_state->metric == early_stop->metric &&
                             stop_state->evaluations_since_best >= early_stop->patience;
  if (!setup_.resumed_from.empty() && (setup_.position.global_step >= last_step_ || stopped_early)) {
    std::string text;
    if (communicator_.rank() == 0) {
      std::ifstream file(setup_.run_directory + "/summary.json");
      text.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    }
    communicator_.broadcast_string(text, 0);
    const auto summary = nlohmann::json::parse(text, nullptr, false);
    if (summary.is_object() && summary.value("steps", std::int64_t{-1}) == setup_.position.global_step) {
      if (communicator_.rank() == 0 && !setup_.quiet)
        std::printf(
            "resumed from %s at step %lld: nothing left to train, the run ended there; its summary.json "
            "stands\n",
            setup_.resumed_from.c_str(), static_cast<long long>(setup_.position.global_step));
      return summary;
    }
  }
  begin_run();
  const std::unique_ptr<Step> step = make_step();
  Bookkeeping bookkeeping = make_bookkeeping();  // its epoch clock starts here
  start_clock(*step, bookkeeping);
  // A checkpoint written after the evaluation that decided to stop (killed before latest.h5):
  // the resumed run ends where the straight one did.
  if (early_stop_ && early_stop_->should_stop()) {
    stopped_early_ = true;
    last_step_ = setup_.position.global_step;
  }
  try {
    while (setup_.position.global_step < last_step_) {
      const std::optional<StepEnd> end = train_step(*step);
      if (!end) break;                                        // the data ran out
      if (bookkeeping.callbacks.read_device_results(*end)) {  // one wait for the device, for all of them
        step->clock->settle();
        bookkeeping.losses.take();
      }
      bookkeeping.callbacks.after_step(*end);
      if (bookkeeping.stop.stopped())
        return {{stopped_for_handover_ ? "stopped_for_handover" : "stopped_by_signal", true},
                {"steps", setup_.position.global_step}};
      if (stopped_early_) break;  // the run ends as at its last step: final checkpoint, summary
    }
    return finish(*step, bookkeeping);
  } catch (const NonFiniteStop&) {
    throw;  // every rank stopped at the same step: no all-reduce is left waiting for a peer
  } catch (...) {
    // Before `step` and `bookkeeping` free their device memory as the error leaves: cudaFree waits
    // for the whole device, and an all-reduce kernel waiting for a peer that failed never ends
    // until its communicator is aborted. (One rank's all-reduce waits for nobody.)
    if (setup_.nccl && setup_.nccl->size() > 1) setup_.nccl->abort_on_error();
    throw;
  }
}

std::optional<StepEnd> Trainer::train_step(Step& step) {
  nn::Model& model = *setup_.model;
  StepStages& stages = *step.stages;
  StepClock& clock = *step.clock;
  InputPipeline& input = *step.input;
  stages.begin(setup_.position.global_step + 1);
  const std::optional<BatchFacts> batch = input.next();  // GPU ranks: uploaded during the last backward
  if (!batch) return std::nullopt;
  stages.end(Stage::DataWait);
  input.prepare();
  // Mixup/CutMix of the normalised batch on the rank's device, drawn from (seed, step).
  const backend::LabelMix mix = step.mixing.apply(input.input(), input.labels(), setup_.position.global_step);
  stages.end(Stage::HostToDevice);
  const nn::ForwardContext context{nn::Mode::Training, setup_.config.seed, setup_.position.global_step,
                                   communicator_.rank()};
  const float loss_scale = setup_.loss_scaler ? static_cast<float>(setup_.loss_scaler->scale()) : 1.0f;
  const float sample_weight = step.gradient_scale * loss_scale;
  step.micro_batches.train_all_but_last(model, input.input(), input.labels(), mix, context, step.loss,
                                        sample_weight);
  const MicroBatch last = step.micro_batches.last(input.input(), input.labels(), mix, context);
  const Tensor& logits = model.forward(last.input, last.context);
  step.loss.forward_backward(logits, last.labels, last.samples, sample_weight, last.grad_logits, last.mix);
  stages.end(Stage::Forward);
  step.exchange->begin_step();  // each bucket's all-reduce starts as soon as backward has finished it
  model.backward(last.input, last.grad_logits, [&](std::int64_t offset) {
    step.micro_batches.add_summed(offset, model.registry().gradients().data());
    step.exchange->bucket_ready(offset);
  });
  clock.mark_queued(Stage::Backward);
  // GPU ranks fetch the next batch and start its upload while backward runs on the device.
  clock.set_aside(Stage::DataWait, input.fetch_ahead(setup_.position.global_step + 1 < last_step_));
  stages.end(Stage::Backward);
  step.exchange->wait();
  stages.end(Stage::AllReduceWait);
  // Finite gradients, a stop signal, a handover: the step's one small collective, where a rank also
  // waits for a slower peer. The last step finishes the run instead of stopping it.
  const bool last_step = setup_.position.global_step + 1 == last_step_;
  const StepAgreement agreement = stages.agree_before_update(gradients_finite(step), last_step);
  update_->apply(agreement.gradients_finite, setup_.position);
  if (average_) average_->after_step(setup_.position.global_step + 1);
  stages.end(Stage::Optimizer);
  clock.record_upload(input.last_upload());

  StepEnd end{.batch = *batch, .epoch_done = advance_position(*batch)};
  end.global_step = setup_.position.global_step;
  end.schedule_step = batch->epoch * setup_.steps_per_epoch + batch->step;
  end.last_step = last_step;
  end.stop_requested = agreement.stop;
  if (!last_step)  // the straggler report, a collective every log interval
    run_control_->end_of_step(end.global_step, clock.busy_seconds(),
                              end.global_step % setup_.config.train.log_every_steps == 0, run_directory_,
                              *progress_);
  stages.end(Stage::SyncWait);
  end.seconds = clock.end_step(step.trained++, end.global_step, *batch);
  return end;
}

bool Trainer::gradients_finite(Step& step) {
  // The finite check waits for the summed gradients without a bound: a stuck peer is caught first.
  // Sums of the same bits are the same on every rank, but MPI does not promise every rank the same
  // sum under every algorithm, and an overflow to inf is a last-bit matter: the ranks then agree
  // explicitly, so none takes an update another skipped.
  step.exchange->wait_before_host_reads();
  auto& registry = setup_.model->registry();
  return setup_.nonfinite_guard->local_gradients_finite(registry.gradients().data(), registry.parameter_count());
}

void Trainer::begin_run() {
  const bool leader = communicator_.rank() == 0;
  start_wall_ = wall_seconds_since_epoch();
  const bool resumed = !setup_.resumed_from.empty();
  run_directory_ = RunDirectory(setup_.run_directory, leader, resumed);
  run_directory_.start_session(setup_.position.global_step + 1, setup_.resumed_from);
  run_directory_.write_config(setup_.config_text);
  if (leader) data::write_statistics_sidecar(setup_.config.data, setup_.run_directory, setup_.dataset);
  run_control_ = std::make_unique<RunControl>(communicator_, setup_.run_directory, setup_.config.distributed.timeout_s);
  // A handover resumes on more ranks: a streamed split cannot continue there (its epoch order is
  // cut per rank), so such a run never stops for one.
  if (setup_.handover_check && setup_.train_split->order().kind == data::ShardOrder::Kind::Permutation)
    run_control_->set_handover_check(setup_.handover_check);
  progress_ = std::make_unique<Progress>(leader && !setup_.quiet, setup_.config.train.log_every_steps);
  reporter_ = std::make_unique<RunReporter>(setup_, communicator_, backend_, run_directory_, *progress_, start_wall_);
  update_ = std::make_unique<WeightUpdate>(setup_, *progress_, run_directory_);
  // Every rank starts from rank 0's weights, whatever it initialised or loaded.
  broadcast_from_root(setup_.model->registry().parameters());
  broadcast_from_root(setup_.model->registry().buffers());
  start_watches_and_average();
  reporter_->start();
}

void Trainer::start_watches_and_average() {
  const auto& config = setup_.config;
  if (config.train.ema) {
    average_ = std::make_unique<optim::WeightAverage>(*config.train.ema, backend_, setup_.model->registry());
    if (setup_.resumed_average) {
      const WeightAverageState& stored = *setup_.resumed_average;
      if (!stored.parameters.empty())
        backend_.copy_from_host(average_->parameters().data(), stored.parameters.data(),
                                stored.parameters.size() * sizeof(float));
      if (!stored.buffers.empty())
        backend_.copy_from_host(average_->buffers().data(), stored.buffers.data(),
                                stored.buffers.size() * sizeof(float));
      average_->set_updates(stored.updates);
      // Every rank continues from rank 0's average, as from its weights.
      if (!stored.parameters.empty()) broadcast_from_root(average_->parameters());
      if (!stored.buffers.empty()) broadcast_from_root(average_->buffers());
    }
  }
  if (config.train.early_stop) {
    const config::EarlyStopConfig& stop = *config.train.early_stop;
    early_stop_ = std::make_unique<EarlyStop>(stop.metric, stop.patience, stop.min_delta);
    if (setup_.resumed_watches.early_stop) early_stop_->watch().restore(*setup_.resumed_watches.early_stop);
  }
  if (!config.checkpoint.keep_best.empty()) {
    keep_best_ = std::make_unique<MetricWatch>(config.checkpoint.keep_best, 0.0);
    if (setup_.resumed_watches.keep_best) keep_best_->restore(*setup_.resumed_watches.keep_best);
  }
}

void Trainer::watch_evaluation(std::int64_t epoch, const EpochEvaluation& evaluation) {
  if (!early_stop_ && !keep_best_) return;
  // Every rank holds the same all-reduced metrics, so every rank decides alike.
  const nlohmann::json fields = evaluation_fields(evaluation);
  const auto value_of = [&](const std::string& metric) { return fields.at(metric).get<double>(); };
  if (keep_best_) best_due_ = keep_best_->observe(value_of(keep_best_->state().metric), epoch);
  if (!early_stop_) return;
  const MetricWatchState& state = early_stop_->watch().state();
  const bool stop = early_stop_->observe(value_of(state.metric), epoch);
  if (!stop || setup_.position.global_step >= last_step_) return;  // the last epoch ends the run anyway
  stopped_early_ = true;
  run_directory_.append_metrics({{"event", "early_stop"},
                                 {"epoch", epoch},
                                 {"step", setup_.position.global_step},
                                 {"metric", state.metric},
                                 {"best", state.best},
                                 {"best_epoch", state.best_epoch},
                                 {"evaluations_since_best", state.evaluations_since_best}});
  char text[256];
  std::snprintf(text, sizeof(text),
                "early stop after epoch %lld: %s has not improved on %.4f (epoch %lld) for %lld evaluations "
                "(train.early_stop.patience %d)",
                static_cast<long long>(epoch), state.metric.c_str(), state.best,
                static_cast<long long>(state.best_epoch),
                static_cast<long long>(state.evaluations_since_best), early_stop_->patience());
  progress_->line(text);
}

CheckpointExtras Trainer::checkpoint_extras() {
  CheckpointExtras extras;
  extras.data_order = setup_.train_split->order().describe();
  extras.train_samples = setup_.train_split->count;
  if (average_) {
    auto& registry = setup_.model->registry();
    WeightAverageState state;
    state.parameters.resize(static_cast<std::size_t>(registry.parameter_count()));
    state.buffers.resize(static_cast<std::size_t>(registry.buffer_count()));
    if (!state.parameters.empty())
      backend_.copy_to_host(state.parameters.data(), average_->parameters().data(),
                            state.parameters.size() * sizeof(float));
    if (!state.buffers.empty())
      backend_.copy_to_host(state.buffers.data(), average_->buffers().data(),
                            state.buffers.size() * sizeof(float));
    state.updates = average_->updates();
    extras.average = std::move(state);
  }
  if (early_stop_) extras.early_stop = early_stop_->watch().state();
  if (keep_best_) extras.keep_best = keep_best_->state();
  return extras;
}

void Trainer::epoch_closed(const RunningTotals& totals) {
  if (!best_due_) return;
  best_due_ = false;
  save_checkpoint(CheckpointKind::Best, totals);  // after the epoch's reset: what a resume continues
}

void Trainer::summarise_watches() {
  if (keep_best_ && keep_best_->state().evaluated) {
    const MetricWatchState& state = keep_best_->state();
    reporter_->add_to_summary("best_checkpoint", {{"metric", state.metric},
                                                  {"epoch", state.best_epoch},
                                                  {"value", state.best},
                                                  {"path", run_directory_.best_checkpoint_path()}});
  }
  if (!early_stop_) return;
  const MetricWatchState& state = early_stop_->watch().state();
  nlohmann::json summary = {
      {"metric", state.metric}, {"patience", early_stop_->patience()}, {"stopped_early", stopped_early_}};
  if (stopped_early_) summary["stopped_after_epoch"] = setup_.position.epoch;
  if (state.evaluated) {
    summary["best"] = state.best;
    summary["best_epoch"] = state.best_epoch;
  }
  reporter_->add_to_summary("early_stop", summary);
}

Trainer::Bookkeeping Trainer::make_bookkeeping() {
  const auto& config = setup_.config;
  TrainingActions& actions = *this;
  StepCallbacks callbacks;
  auto& record = callbacks.add<TrainingRecord>();
  // A resumed run continues the epoch's and the log interval's sums where the checkpoint left them.
  auto& losses = callbacks.add<TrainingLosses>(
      backend_, setup_.local_batches[static_cast<std::size_t>(communicator_.rank())], setup_.resumed_totals);
  callbacks.add<ProgressCallback>(*progress_, record, losses,
                                  ProgressCallback::RunLength{config.train.epochs, setup_.steps_per_epoch,
                                                              setup_.global_batch, last_step_,
                                                              config.train.log_every_steps});
  callbacks.add<StepMetricsCallback>(communicator_, *run_control_, run_directory_, *setup_.schedule,
                                     setup_.loss_scaler.get(), *setup_.nonfinite_guard, losses,
                                     setup_.global_batch, config.train.log_every_steps, start_wall_,
                                     config.train.clip_grad_norm ? &update_->gradient_norms() : nullptr);
  auto& epoch_end = callbacks.add<EpochEndCallback>(actions, record, losses);
  // After the epoch's reset, as the checkpoint must hold the sums a resumed run continues.
  callbacks.add<CheckpointCallback>(actions, losses, config.checkpoint.every_steps);
  auto& stop = callbacks.add<StopSignalCallback>(actions, losses);
  auto& trace = callbacks.add<TraceCallback>(config.trace.steps);
  return Bookkeeping{std::move(callbacks), record, losses, epoch_end, stop, trace};
}

std::unique_ptr<Trainer::Step> Trainer::make_step() {
  const auto& config = setup_.config;
  auto& registry = setup_.model->registry();
  data::ShardPlan plan(setup_.train_split->count, setup_.local_batches, communicator_.rank(), config.seed,
                       setup_.train_split->order());
  const int local_batch = plan.local_batch();
  auto exchange = make_gradient_exchange(
      communicator_, setup_.nccl, backend_, registry.gradients().data(), registry.parameter_count(),
      static_cast<std::size_t>(config.distributed.bucket_mb * 1024 * 1024),
      config.distributed.grad_dtype == config::GradientDtype::Bf16 ? comm::WireType::BFloat16 : comm::WireType::Float32);
  auto input = make_input_pipeline(backend_, setup_.train_split, plan, config.data, setup_.dataset,
                                   setup_.position, config.train.epochs);
  const float gradient_scale = 1.0f / static_cast<float>(plan.global_batch());
  return std::unique_ptr<Step>(new Step{
      std::move(plan), std::move(exchange), std::move(input), nullptr, nullptr,
      MicroBatches(backend_, local_batch, setup_.micro_batches, setup_.model->classes(),
                   registry.parameter_count(), communicator_.size()),
      TrainingLoss(backend_, setup_.model->classes(), static_cast<float>(config.train.label_smoothing)),
      BatchMixing(backend_, config.train.mixup, config.seed, local_batch), gradient_scale});
}

void Trainer::start_clock(Step& step, Bookkeeping& bookkeeping) {
  step.clock = make_step_clock(backend_, *step.exchange, setup_.nccl != nullptr,
                               [&](const SettledStep& settled) { bookkeeping.callbacks.step_settled(settled); });
  step.stages = std::make_unique<StepStages>(*step.clock, *run_control_);
  reporter_->accumulation(communicator_.allgather(static_cast<std::uint64_t>(setup_.micro_batches)));
}

bool Trainer::advance_position(const BatchFacts& batch) {
  TrainingPosition& position = setup_.position;
  buffers_synchronised_ = false;
  ++position.global_step;
  position.samples_seen += setup_.global_batch;
  position.epoch = batch.epoch;
  position.step_in_epoch = batch.step + 1;
  if (position.step_in_epoch < setup_.steps_per_epoch) return false;
  position.epoch += 1;
  position.step_in_epoch = 0;
  return true;
}

nlohmann::json Trainer::finish(Step& step, Bookkeeping& bookkeeping) {
  run_control_->enter("final evaluation and summary", setup_.position.global_step, comm::StageKind::Collective);
  step.clock->settle();  // a run whose data ended early, too
  bookkeeping.losses.take();
  if (!bookkeeping.epoch_end.evaluated_last_step()) {
    reporter_->close_epoch_metrics(bookkeeping.record.epoch_clock.seconds());
    reporter_->partial_epoch_end(evaluate_now(bookkeeping.losses.totals()));
  }
  save_checkpoint(CheckpointKind::Final, bookkeeping.losses.totals());
  // The trace's clock offsets and the summary's gathers wait for every rank again: watched.
  run_control_->enter("final evaluation and summary", setup_.position.global_step,
                      comm::StageKind::Collective);
  bookkeeping.trace.trace().write_merged(communicator_, run_directory_.path() + "/trace.json",
                                         "rank " + std::to_string(communicator_.rank()) + " (" +
                                             communicator_.host_name() + ", " + backend_.name() + ")");
  summarise_watches();
  return reporter_->finish(bookkeeping.record, step.micro_batches.count());
}

EpochEvaluation Trainer::evaluate_now(const RunningTotals& totals) {
  // The forward passes over this rank's part of the test split are its own work, as long as the
  // part is big (a CPU rank's part beside GPU ranks' takes far longer): watched as a collective,
  // they ended a healthy job once they outlasted distributed.timeout_s. Only the sums are waits.
  const std::int64_t step = setup_.position.global_step;
  const auto reduction = [&] { run_control_->enter("evaluation sums", step, comm::StageKind::Collective); };
  reduction();
  synchronise_buffers();
  EpochEvaluation evaluation;
  run_control_->enter("evaluation", step, comm::StageKind::Local);
  evaluation.test =
      evaluate(*setup_.model, *setup_.test_split, setup_.dataset.mean, setup_.dataset.standard_deviation,
               communicator_, evaluation_batch, setup_.top_k, reduction);
  if (average_) {
    const optim::AverageInModel average_in_model(*average_);
    run_control_->enter("evaluation", step, comm::StageKind::Local);
    evaluation.average =
        evaluate(*setup_.model, *setup_.test_split, setup_.dataset.mean, setup_.dataset.standard_deviation,
                 communicator_, evaluation_batch, setup_.top_k, reduction);
  }
  double sums[2] = {totals.epoch_loss_sum, static_cast<double>(totals.epoch_samples)};
  communicator_.allreduce_sum(sums, 2);
  evaluation.train_loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
  return evaluation;
}

void Trainer::end_of_epoch(std::int64_t epoch, const TrainingRecord& record, const RunningTotals& totals) {
  run_control_->enter("evaluation sums", setup_.position.global_step, comm::StageKind::Collective);
  const double epoch_seconds = record.epoch_clock.seconds();  // training only, before the evaluation
  reporter_->close_epoch_metrics(epoch_seconds);
  const GradientNorms gradient_norms = std::exchange(update_->gradient_norms().epoch, GradientNorms{});
  const EpochEvaluation evaluation = evaluate_now(totals);
  reporter_->epoch_end(epoch, record, epoch_seconds, evaluation, gradient_norms);
  watch_evaluation(epoch + 1, evaluation);
}

void Trainer::stop_on_signal(const RunningTotals& totals) {
  const auto every_steps = setup_.config.checkpoint.every_steps;
  const std::int64_t step = setup_.position.global_step;
  if (every_steps <= 0 || step % every_steps != 0) save_checkpoint(CheckpointKind::Periodic, totals);
  run_control_->report_stop(step, run_directory_.checkpoint_path(step), run_directory_, *progress_);
  // All ranks leave together, after the checkpoint: a launcher that tears the job down when the
  // first rank exits must not kill rank 0 while it writes.
  run_control_->enter("stop checkpoint", step, comm::StageKind::Collective);
  communicator_.barrier();
  (run_control_->stopped_for_handover() ? stopped_for_handover_ : stopped_by_signal_) = true;
}

void Trainer::save_checkpoint(CheckpointKind kind, const RunningTotals& totals) {
  const bool final = kind == CheckpointKind::Final;
  const TrainingPosition& position = setup_.position;
  // The buffers' all-reduce and the totals' gather wait for every rank: watched as collectives (a
  // peer stopped here held the job forever under the step's last, local, stage).
  run_control_->enter("checkpoint", position.global_step, comm::StageKind::Collective);
  synchronise_buffers();
  const std::string path = final ? run_directory_.latest_checkpoint_path()
                           : kind == CheckpointKind::Best
                               ? run_directory_.best_checkpoint_path()
                               : run_directory_.checkpoint_path(position.global_step);
  update_->require_finite_state(path, position.global_step);
  const auto every_rank_totals = gather_running_totals(communicator_, totals);
  // Rank 0 writes alone: its own work, not a wait for the others.
  run_control_->enter("checkpoint write", position.global_step, comm::StageKind::Local);
  if (communicator_.rank() != 0) return;
  const CheckpointExtras extras = checkpoint_extras();
  const double rescaled_rate = setup_.learning_rate != setup_.config.optimizer.learning_rate ? setup_.learning_rate : 0.0;
  write_checkpoint(path, backend_, setup_.model->registry(), setup_.optimizer.get(), position,
                   communicator_.size(), setup_.config.seed, setup_.config_text,
                   setup_.loss_scaler ? &setup_.loss_scaler->state() : nullptr, setup_.local_batches,
                   every_rank_totals, rescaled_rate,
                   setup_.loss_scaler ? 0 : setup_.nonfinite_guard->skipped_steps(), extras);
  if (kind == CheckpointKind::Periodic) run_directory_.prune_checkpoints(setup_.config.checkpoint.keep);
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
  average_buffers(*setup_.model, communicator_);
  if (average_ && communicator_.size() > 1) {  // the average's buffers follow each rank's own: averaged alike
    const optim::AverageInModel average_in_model(*average_);
    average_buffers(*setup_.model, communicator_);
  }
  buffers_synchronised_ = true;
}

}  // namespace phalanx::train
