// RunReporter: what a run tells about itself, apart from training it: the lines at its start (each
// rank's device and arithmetic, the model and data, the batch split, a resume), each epoch's
// events, line and breakdown table, the machine metrics beside them, and summary.json and
// report.html at its end. The trainer hands it facts; it decides what is written and printed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "loop/gradient_norms.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/train/evaluation.hpp"
#include "phalanx/train/progress.hpp"
#include "phalanx/train/run_directory.hpp"
#include "reporting/machine_metrics.hpp"
#include "reporting/training_record.hpp"
#include "setup/training_setup.hpp"

namespace phalanx::train {

// An evaluation of the test split after training on, with the training loss of the same steps.
struct EpochEvaluation {
  EvaluationResult test;
  std::optional<EvaluationResult> average;  // the weight average's (train.ema) on the same split
  double train_loss = 0;
};

// What summary.json, its history and the metric watches take from an evaluation: test_accuracy,
// test_loss, each test_top<k>_accuracy, the same with ema_ before them for the average, train_loss.
nlohmann::json evaluation_fields(const EpochEvaluation& evaluation);

class RunReporter {
 public:
  // `setup` is the trainer's: its position is where training stands.
  RunReporter(const TrainingSetup& setup, const comm::Communicator& communicator, const backend::Backend& backend,
              RunDirectory& run_directory, Progress& progress, double start_wall);

  // Collective: every rank's line (device, threads, arithmetic), then the run's.
  void start();
  // Every rank's micro-batches per step (gathered): a line when any rank accumulates gradients.
  void accumulation(const std::vector<std::uint64_t>& micro_batches);
  // The epoch's machine metrics end before its evaluation, so that they describe training.
  void close_epoch_metrics(double epoch_seconds);
  // Collective: the epoch and eval events, history, the epoch's line and every rank's breakdown.
  // `epoch_seconds`: the epoch's training time, read before its evaluation.
  void epoch_end(std::int64_t epoch, const TrainingRecord& record, double epoch_seconds,
                 const EpochEvaluation& evaluation, const GradientNorms& gradient_norms);
  // A run that ends mid-epoch (train.max_steps) reports the test metrics of what it trained.
  void partial_epoch_end(const EpochEvaluation& evaluation);
  // Collective: summary.json (rank 0), report.html, the final lines; returns the summary.
  nlohmann::json finish(const TrainingRecord& record, int micro_batches);
  // A part of summary.json that the trainer decides (early_stop, best_checkpoint).
  void add_to_summary(const std::string& key, nlohmann::json value) {
    summary_additions_[key] = std::move(value);
  }

 private:
  // model.init_from and train.freeze, when set: what was read, re-initialised and frozen.
  void initial_weights_lines();
  void print_breakdown_table(const nlohmann::json& breakdown);
  void write_report();
  nlohmann::json rank_entry(const TrainingRecord& record, int micro_batches, double local_rate);

  const TrainingSetup& setup_;
  const comm::Communicator& communicator_;
  const backend::Backend& backend_;
  RunDirectory& run_directory_;
  Progress& progress_;
  double start_wall_;
  MachineMetrics machine_;
  std::vector<monitor::MetricField> epoch_machine_fields_;
  nlohmann::json last_evaluation_;
  nlohmann::json history_;  // one entry per evaluated epoch (null before the first)
  nlohmann::json summary_additions_ = nlohmann::json::object();
};

}  // namespace phalanx::train
