// The trainer's bookkeeping as step callbacks: the progress line, the step events of each log
// interval, the epoch's end with its evaluation, periodic checkpoints, the stop on a signal, and
// the trace's sampled steps. Each decides when it acts; what needs the model, the evaluation data
// or the checkpoint files it asks of the trainer (TrainingActions).
#pragma once

#include <cstdint>

#include "control/run_control.hpp"
#include "loop/gradient_norms.hpp"
#include "loop/nonfinite_guard.hpp"
#include "loop/step_callback.hpp"
#include "loop/training_losses.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/optim/loss_scaler.hpp"
#include "phalanx/optim/schedule.hpp"
#include "phalanx/train/progress.hpp"
#include "phalanx/train/run_directory.hpp"
#include "reporting/trace_recorder.hpp"
#include "reporting/training_record.hpp"

namespace phalanx::train {

// Periodic: step-<N>.h5 (pruned to checkpoint.keep); Final: latest.h5; Best: best.h5 (checkpoint.keep_best).
enum class CheckpointKind { Periodic, Final, Best };

// What the callbacks ask of the trainer, which owns the model, the data and the run's files.
class TrainingActions {
 public:
  virtual ~TrainingActions() = default;
  // Evaluates after epoch `epoch` (0-based) and writes its events and breakdown (collective).
  virtual void end_of_epoch(std::int64_t epoch, const TrainingRecord& record,
                            const RunningTotals& totals) = 0;
  // After the epoch's sums restart, before the step's periodic checkpoint: best.h5 when the
  // evaluation improved on it. A checkpoint that records the new best then never exists without
  // that best.h5 (a kill between the two would leave best.h5 one best behind for good).
  virtual void epoch_closed(const RunningTotals& totals) = 0;
  virtual void save_checkpoint(CheckpointKind kind, const RunningTotals& totals) = 0;
  // Checkpoints the step (unless a periodic one did), reports the stop, and leaves with every rank.
  virtual void stop_on_signal(const RunningTotals& totals) = 0;
};

// The live line (or a line per log interval): epoch, step, images/s, loss, time left.
class ProgressCallback final : public StepCallback {
 public:
  struct RunLength {  // what the line shows the step against
    std::int64_t epochs, steps_per_epoch, global_batch, last_step;
    int log_every_steps;
  };
  ProgressCallback(Progress& progress, const TrainingRecord& record, const TrainingLosses& losses,
                   RunLength run_length)
      : progress_(progress), record_(record), losses_(losses), run_length_(run_length) {}
  bool reads_device_results(const StepEnd& step) const override;
  void after_step(const StepEnd& step) override;

 private:
  Progress& progress_;
  const TrainingRecord& record_;
  const TrainingLosses& losses_;
  RunLength run_length_;
};

// A "step" event in metrics.jsonl every log interval: the interval's loss and accuracy over every
// rank's samples, weighted by sample counts (local batches may differ between ranks).
class StepMetricsCallback final : public StepCallback {
 public:
  StepMetricsCallback(const comm::Communicator& communicator, RunControl& run_control,
                      RunDirectory& run_directory, const optim::Schedule& schedule,
                      const optim::LossScaler* loss_scaler, const NonFiniteGuard& nonfinite_guard,
                      TrainingLosses& losses, std::int64_t global_batch, int log_every_steps,
                      double start_wall, GradientNormRecord* gradient_norms)
      : communicator_(communicator),
        run_control_(run_control),
        run_directory_(run_directory),
        schedule_(schedule),
        loss_scaler_(loss_scaler),
        nonfinite_guard_(nonfinite_guard),
        losses_(losses),
        global_batch_(global_batch),
        log_every_steps_(log_every_steps),
        start_wall_(start_wall),
        gradient_norms_(gradient_norms) {}
  bool reads_device_results(const StepEnd& step) const override { return due(step); }
  void after_step(const StepEnd& step) override;

 private:
  bool due(const StepEnd& step) const { return step.global_step % log_every_steps_ == 0; }
  const comm::Communicator& communicator_;
  RunControl& run_control_;
  RunDirectory& run_directory_;
  const optim::Schedule& schedule_;
  const optim::LossScaler* loss_scaler_;
  const NonFiniteGuard& nonfinite_guard_;
  TrainingLosses& losses_;
  std::int64_t global_batch_;
  int log_every_steps_;
  double start_wall_;
  GradientNormRecord* gradient_norms_;  // with train.clip_grad_norm, else null
};

// At an epoch's end: evaluation, the epoch and eval events; then the next epoch's sums start.
class EpochEndCallback final : public StepCallback {
 public:
  EpochEndCallback(TrainingActions& actions, TrainingRecord& record, TrainingLosses& losses)
      : actions_(actions), record_(record), losses_(losses) {}
  bool reads_device_results(const StepEnd& step) const override { return step.epoch_done; }
  void after_step(const StepEnd& step) override;
  // Whether the run's last step so far ended an epoch (and so was evaluated).
  bool evaluated_last_step() const { return evaluated_last_step_; }

 private:
  TrainingActions& actions_;
  TrainingRecord& record_;
  TrainingLosses& losses_;
  bool evaluated_last_step_ = false;
};

// checkpoint.every_steps: a step-<N>.h5 every that many steps.
class CheckpointCallback final : public StepCallback {
 public:
  CheckpointCallback(TrainingActions& actions, const TrainingLosses& losses, std::int64_t every_steps)
      : actions_(actions), losses_(losses), every_steps_(every_steps) {}
  bool reads_device_results(const StepEnd& step) const override { return due(step); }
  void after_step(const StepEnd& step) override {
    if (due(step)) actions_.save_checkpoint(CheckpointKind::Periodic, losses_.totals());
  }

 private:
  bool due(const StepEnd& step) const { return every_steps_ > 0 && step.global_step % every_steps_ == 0; }
  TrainingActions& actions_;
  const TrainingLosses& losses_;
  std::int64_t every_steps_;
};

// A stop signal (preemption) reached a rank: after the epoch's evaluation and the periodic
// checkpoint, all ranks stop here with a checkpoint (the last step just finishes instead).
class StopSignalCallback final : public StepCallback {
 public:
  StopSignalCallback(TrainingActions& actions, const TrainingLosses& losses)
      : actions_(actions), losses_(losses) {}
  bool reads_device_results(const StepEnd& step) const override { return step.stop_requested; }
  void after_step(const StepEnd& step) override;
  bool stopped() const { return stopped_; }

 private:
  TrainingActions& actions_;
  const TrainingLosses& losses_;
  bool stopped_ = false;
};

// The trace's timeline of a few sampled steps after warm-up (trace.steps of them).
class TraceCallback final : public StepCallback {
 public:
  explicit TraceCallback(std::int64_t sampled_steps) : trace_(TrainingRecord::warmup_steps, sampled_steps) {}
  void step_settled(const SettledStep& step) override;
  const TraceRecorder& trace() const { return trace_; }

 private:
  TraceRecorder trace_;
};

}  // namespace phalanx::train
