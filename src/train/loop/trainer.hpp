// Trainer: the training loop of docs/DESIGN.md §1 for one data-parallel job, over what the job's
// set-up built and checked (setup/training_setup.hpp). The loop names its stages; what differs
// between CPU and GPU ranks lives behind GradientExchange, StepClock and InputPipeline, the
// bookkeeping around it in step callbacks, and what the run tells about itself in RunReporter.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "control/run_control.hpp"
#include "loop/weight_update.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/optim/weight_average.hpp"
#include "phalanx/train/metric_watch.hpp"
#include "phalanx/train/progress.hpp"
#include "phalanx/train/run_directory.hpp"
#include "reporting/bookkeeping_callbacks.hpp"
#include "reporting/run_reporter.hpp"
#include "setup/training_setup.hpp"

namespace phalanx::train {

class Trainer final : private TrainingActions {
 public:
  // Writes nothing: run() starts the run's files.
  Trainer(TrainingSetup setup, const comm::Communicator& communicator, backend::Backend& backend);
  ~Trainer() override;

  // Collective: trains to the end (or train.max_steps) and returns summary.json's content; after a
  // stop signal or a handover {"stopped_by_signal" | "stopped_for_handover": true, "steps": N}.
  nlohmann::json run();

  // The step the run ends at: train.max_steps, or the end of the epochs from where it stands.
  std::int64_t last_step() const { return last_step_; }
  bool stopped_by_signal() const { return stopped_by_signal_; }
  bool stopped_for_handover() const { return stopped_for_handover_; }

 private:
  struct Step;         // the parts of a step that differ between ranks, made once per run
  struct Bookkeeping;  // the run's step callbacks and the ones the loop asks

  void begin_run();  // run directory, run control, reporting, rank 0's weights on every rank
  std::unique_ptr<Step> make_step();
  Bookkeeping make_bookkeeping();
  // The step clock (it hands settled steps to the bookkeeping) and the stages that mark it.
  void start_clock(Step& step, Bookkeeping& bookkeeping);
  // Trains one step; nothing when the data has run out.
  std::optional<StepEnd> train_step(Step& step);
  bool gradients_finite(Step& step);
  // Moves the position past `batch`; true when that ended its epoch.
  bool advance_position(const BatchFacts& batch);
  nlohmann::json finish(Step& step, Bookkeeping& bookkeeping);

  // TrainingActions, for the bookkeeping callbacks.
  void end_of_epoch(std::int64_t epoch, const TrainingRecord& record, const RunningTotals& totals) override;
  void epoch_closed(const RunningTotals& totals) override;
  void save_checkpoint(CheckpointKind kind, const RunningTotals& totals) override;
  void stop_on_signal(const RunningTotals& totals) override;
  // The test split's metrics now, with the training loss of `totals`' epoch so far (collective).
  EpochEvaluation evaluate_now(const RunningTotals& totals);
  void broadcast_from_root(Tensor& tensor);
  void synchronise_buffers();
  // train.ema, train.early_stop, checkpoint.keep_best: made from rank 0's weights (and a resumed
  // run's checkpoint) once every rank holds them.
  void start_watches_and_average();
  // After an evaluation: the watches take its metrics; a new best is saved once the epoch is
  // closed, a stop acted on after the step.
  void watch_evaluation(std::int64_t epoch, const EpochEvaluation& evaluation);
  CheckpointExtras checkpoint_extras();
  void summarise_watches();  // summary.json's best_checkpoint and early_stop

  TrainingSetup setup_;  // its position is where training stands
  const comm::Communicator& communicator_;
  backend::Backend& backend_;
  std::int64_t last_step_ = 0;
  double start_wall_ = 0;
  RunDirectory run_directory_;
  std::unique_ptr<RunControl> run_control_;  // watchdog, straggler report, stop agreement
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<RunReporter> reporter_;
  std::unique_ptr<WeightUpdate> update_;
  bool buffers_synchronised_ = false;
  std::unique_ptr<optim::WeightAverage> average_;  // train.ema
  std::unique_ptr<EarlyStop> early_stop_;          // train.early_stop
  std::unique_ptr<MetricWatch> keep_best_;         // checkpoint.keep_best
  bool best_due_ = false;  // the last evaluation improved keep_best's metric: best.h5 once the epoch closes
  bool stopped_early_ = false;  // train.early_stop decided to end the run after this step
  bool stopped_by_signal_ = false;
  bool stopped_for_handover_ = false;
};

}  // namespace phalanx::train
