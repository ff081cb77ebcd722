// Trainer: the training loop of DESIGN §1 for one data-parallel job. Construction does all the
// checking that bad input can fail (data, model, checkpoint) and writes nothing; run() trains,
// evaluates each epoch, checkpoints, and writes the run directory. The loop names its stages; what
// differs between CPU and GPU ranks lives behind GradientExchange, StepClock and InputPipeline,
// and the bookkeeping around it in step callbacks (bookkeeping_callbacks.hpp).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/nccl_communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/sample_source.hpp"
#include "phalanx/monitor/gpu_metrics.hpp"
#include "phalanx/monitor/host_metrics.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/optim/loss_scaler.hpp"
#include "phalanx/optim/optimizer.hpp"
#include "phalanx/optim/schedule.hpp"
#include "phalanx/train/arithmetic_setup.hpp"
#include "phalanx/train/batch_split.hpp"
#include "phalanx/train/bookkeeping_callbacks.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/micro_batches.hpp"
#include "phalanx/train/nonfinite_guard.hpp"
#include "phalanx/train/run_control.hpp"
#include "phalanx/train/run_directory.hpp"
#include "phalanx/train/stage_times.hpp"
#include "phalanx/train/step_clock.hpp"

namespace phalanx::train {

class Progress;

struct TrainerOptions {
  config::Config config;
  std::string config_text;    // resolved YAML (config::to_yaml)
  std::string run_directory;  // identical on every rank
  std::string resume;         // "", "auto" or a checkpoint path
  int threads = 1;            // threads of this rank, for the log and summary
  // Set when every rank of the job drives a GPU: gradients are then summed by NCCL on the
  // device; otherwise by MPI on host memory. Owned by the caller, outlives the Trainer.
  comm::NcclCommunicator* nccl = nullptr;
  bool quiet = false;  // no progress lines on stdout (a sweep's trials: the leaderboard speaks)
  // The ranks' local batches (DESIGN §3); with none given, train.batch_size on every rank.
  BatchSplit batch_split{};
  // Asked on every rank in every step but the last, before its update: true on any rank stops the
  // run after that step with a checkpoint, as a stop signal does, but recorded as a "handover" (a
  // sweep regrouping the trial onto more ranks); run() then returns {"stopped_for_handover": true,
  // "steps": N}. Not asked when the training split is streamed (data.cache: none): that run cannot
  // continue on other ranks.
  std::function<bool()> handover_check{};
  // The checkpoint `resume` names, already open (its seal checked once, its header read while the
  // caller set the run up): the trainer loads from it instead of opening the file again, and lets
  // go of it once loaded. Null: the trainer opens `resume` itself.
  std::shared_ptr<const OpenCheckpoint> checkpoint{};
};

class Trainer : private TrainingActions {
 public:
  Trainer(TrainerOptions options, const comm::Communicator& communicator, backend::Backend& backend);
  ~Trainer();
  // Trains to the end (or train.max_steps) and returns summary.json's content.
  nlohmann::json run();

  nn::Model& model() { return *model_; }
  // Where training starts (after a resume) or stands.
  const TrainingPosition& position() const { return position_; }
  // This rank's train.precision and activation_dtype, auto resolved.
  const Arithmetic& arithmetic() const { return arithmetic_; }
  // True when run() returned early because a stop signal (SIGTERM, SIGUSR1) reached a rank; the
  // checkpoint of the last step is written.
  bool stopped_by_signal() const { return stopped_by_signal_; }
  // True when run() returned early because the handover check asked for it.
  bool stopped_for_handover() const { return stopped_for_handover_; }

 private:
  struct Bookkeeping;    // the run's step callbacks and the ones the loop asks
  void start_session();  // run directory, run control, progress, machine metrics, rank 0's weights
  Bookkeeping make_bookkeeping(std::int64_t global_batch, std::int64_t last_step);
  // Between the gradient all-reduce and the update: this rank's finite check of the summed
  // gradients and the ranks' agreement on it, a stop and a handover (RunControl), its wait set
  // aside on `clock` as sync wait.
  StepAgreement agree_before_update(GradientExchange& exchange, StepClock& clock, bool last_step);
  // The update, or its skip when the agreed gradients are not finite (the loss scaler's, or
  // train.nonfinite's).
  void update_weights(bool finite);
  // A step whose summed gradients are not finite: stop (throws) or log the skip (train.nonfinite).
  void on_nonfinite_gradients();
  // Stops, naming the parameter, before a checkpoint of weights that are not finite is written.
  void require_finite_state(const std::string& checkpoint_path);
  // Stops before the model is allocated when the weights, gradients and optimizer state of a model
  // of `size` (its ModelPlan's) cannot fit in this rank's memory (memory_check.hpp).
  void require_model_fits(const nn::ModelSize& size);
  // Stops before training when a step's activations cannot fit in this rank's memory (memory_check.hpp).
  void require_activations_fit();
  // Updates left out so far: the loss scaler's count, or the non-finite guard's.
  std::int64_t skipped_updates() const;
  // "the last good checkpoint, PATH, is kept" or that none was written yet.
  std::string kept_checkpoint_note() const;
  // Moves the position past `batch`; true when that ended its epoch.
  bool advance_position(const BatchFacts& batch, std::int64_t global_batch);
  // The step of the learning-rate schedule at `position`: epochs x steps per epoch + the batch in
  // the epoch. The number of updates made (global_step) equals it unless a resume changed the
  // global batch (elastic.global_batch: change).
  std::int64_t schedule_step(const TrainingPosition& position) const;
  // Gradient accumulation for this rank's local batch (micro_batches_per_step: train.accumulation_steps,
  // or auto after a shrink); none when it trains in one piece.
  std::unique_ptr<MicroBatches> make_micro_batches(int local_batch) const;
  // TrainingActions, for the bookkeeping callbacks.
  void end_of_epoch(std::int64_t epoch, const TrainingRecord& record, const RunningTotals& totals) override;
  void save_checkpoint(CheckpointKind kind, const RunningTotals& totals) override;
  void stop_on_signal(const RunningTotals& totals) override;
  // A run that ends mid-epoch (train.max_steps) still reports test metrics for what it trained.
  void evaluate_partial_epoch(double epoch_seconds, const RunningTotals& totals);
  nlohmann::json write_summary(const TrainingRecord& record, std::int64_t global_batch, int local_batch);
  void print_breakdown_table(const nlohmann::json& breakdown);
  void write_report(Progress& progress);  // report.html (rank 0)
  void broadcast_from_root(Tensor& tensor);
  void synchronise_buffers();
  // Host (and GPU) metrics of the interval since the last call, for one epoch event; also folded
  // into the run's totals for summary.json.
  std::vector<std::pair<std::string, double>> close_metrics_interval(double seconds);
  void resume_from(const OpenCheckpoint& open_checkpoint);
  void require_resumable(const std::string& checkpoint, const CheckpointHeader& header) const;

  TrainerOptions options_;
  const comm::Communicator& communicator_;
  backend::Backend& backend_;
  data::DatasetInfo dataset_info_;
  std::shared_ptr<data::SampleSource> train_split_;  // as data.cache holds it
  std::shared_ptr<const data::Split> test_split_;
  std::unique_ptr<nn::Model> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<optim::Schedule> schedule_;
  std::unique_ptr<optim::LossScaler> loss_scaler_;  // dynamic loss scaling, when enabled
  std::unique_ptr<NonFiniteGuard> nonfinite_guard_;  // train.nonfinite
  std::int64_t steps_per_epoch_ = 0;
  std::vector<int> local_batches_;  // every rank's, from options_.batch_split
  std::int64_t global_batch_ = 0;
  TrainingPosition position_;
  std::string resumed_from_;
  Arithmetic arithmetic_;      // this rank's train.precision and activation_dtype, auto resolved
  int micro_batch_count_ = 1;  // micro-batches per step on this rank (gradient accumulation)
  double learning_rate_ = 0;   // the schedule's peak rate (the config's unless a resume rescaled it)
  // A resume on another world size or global batch: what changed (summary.json "elastic").
  nlohmann::json resumed_elastic_;
  std::optional<RunningTotals> resumed_totals_;  // this rank's, from the checkpoint (older ones: none)
  RunDirectory run_directory_;
  nlohmann::json last_evaluation_;
  nlohmann::json history_;
  std::unique_ptr<Progress> progress_;
  double start_wall_ = 0;
  bool buffers_synchronised_ = false;
  std::unique_ptr<monitor::HostSampler> host_sampler_;
  std::unique_ptr<monitor::GpuSampler> gpu_sampler_;
  std::map<std::string, double> run_metrics_;  // whole-run totals, peaks and time-weighted means
  double run_metrics_seconds_ = 0;
  std::unique_ptr<RunControl> run_control_;  // watchdog, straggler report, stop agreement
  bool stopped_by_signal_ = false;
  bool stopped_for_handover_ = false;
};

}  // namespace phalanx::train
