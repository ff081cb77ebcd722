// TrainingSetup: everything a Trainer trains with, set up and checked before anything is written:
// the data (training source, this rank's evaluation part, the dataset's statistics), the model
// allocated once its plan and the step's activations were found to fit this rank's memory, the
// optimizer and schedule, the loss scaler and non-finite guard, and where training starts (the
// checkpoint's weights loaded after the resume policy passed).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "loop/nonfinite_guard.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/nccl_communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/sample_source.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/optim/loss_scaler.hpp"
#include "phalanx/optim/optimizer.hpp"
#include "phalanx/optim/schedule.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/running_totals.hpp"
#include "phalanx/train/arithmetic.hpp"
#include "setup/batch_split.hpp"
#include "setup/initial_weights.hpp"

namespace phalanx::train {

struct TrainingSetup {
  config::Config config;
  std::string config_text;  // the resolved YAML (config.yaml, checkpoints)
  std::string run_directory;
  int threads = 1;  // this rank's, for the log and summary
  // Set when every rank drives a GPU: gradients are summed by NCCL on the devices.
  comm::NcclCommunicator* nccl = nullptr;
  bool quiet = false;
  std::function<bool()> handover_check;

  BatchSplit batch_split;           // as decided (empty local batches: train.batch_size each)
  std::vector<int> local_batches;   // every rank's
  std::int64_t global_batch = 0;
  Arithmetic arithmetic;            // this rank's precision and activations, auto resolved
  int micro_batches = 1;            // this rank's micro-batches per step

  data::DatasetInfo dataset;
  std::shared_ptr<data::SampleSource> train_split;  // as data.cache holds it
  std::shared_ptr<const data::Split> test_split;    // this rank's part
  std::int64_t steps_per_epoch = 0;
  std::vector<int> top_k;  // the top-k accuracies evaluation reports (reported_top_k)

  std::unique_ptr<nn::Model> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::Schedule> schedule;
  std::unique_ptr<optim::LossScaler> loss_scaler;  // dynamic loss scaling, when enabled
  std::unique_ptr<NonFiniteGuard> nonfinite_guard;
  double learning_rate = 0;  // the schedule's peak (the config's unless a resume rescaled it)

  TrainingPosition position;
  std::int64_t last_step = 0;  // the step the run ends at: train.max_steps, or the epochs' end
  std::string resumed_from;
  InitialWeights initial_weights;  // train.freeze, and model.init_from on a fresh start (rank 0 reads)
  nlohmann::json elastic;  // what an elastic resume changed (summary.json "elastic"), else null
  std::optional<RunningTotals> resumed_totals;
  std::optional<WeightAverageState> resumed_average;  // train.ema: the checkpoint's average
  CheckpointExtras resumed_watches;  // the checkpoint's train.early_stop and checkpoint.keep_best states
};

// What set_up_training builds from: the job's decisions so far.
struct TrainingRequest {
  config::Config config;
  std::string run_directory;
  int threads = 1;
  comm::NcclCommunicator* nccl = nullptr;
  bool quiet = false;
  std::function<bool()> handover_check;
  BatchSplit batch_split;
  const OpenCheckpoint* checkpoint = nullptr;  // the resume's, null for a fresh start
  std::function<void(config::Config&, std::int64_t, std::int64_t)> set_length;
  std::vector<std::string> checkpoint_config_overrides;  // JobRequest's
  std::string config_source;                             // JobRequest's: named when the model does not fit
};

// Opens the data, plans and allocates the model (its state and a step's activations checked
// against this rank's memory), makes the optimizer, schedule, loss scaler and guard, and applies
// the resume policy then loads the checkpoint. Collective (the data's statistics and evaluation
// parts); InvalidInput naming the key or file when the job cannot train.
TrainingSetup set_up_training(TrainingRequest request, const comm::Communicator& communicator,
                              backend::Backend& backend);

}  // namespace phalanx::train
