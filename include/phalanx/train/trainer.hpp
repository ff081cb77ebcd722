// Trainer: the training loop of DESIGN §1 for one data-parallel job. Construction does all the
// checking that bad input can fail (data, model, checkpoint) and writes nothing; run() trains,
// evaluates each epoch, checkpoints, and writes the run directory.
#pragma once

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
#include "phalanx/train/batch_split.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/run_directory.hpp"

namespace phalanx::train {

class Progress;
class RunControl;

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
};

// Seconds per stage of a step; `other` is what the named stages do not cover. The stages add up
// to `total`; `allreduce_total` is not a stage: it is the whole all-reduce window, of which only
// `allreduce_wait` (exposed) was not hidden behind backward. `sync_wait` is the step's time in the
// run-control collectives after the optimizer (stop agreement, straggler report): mostly waiting
// for a peer that left the gradient all-reduce later.
struct StageTimes {
  double data_wait = 0, forward = 0, backward = 0, allreduce_wait = 0, optimizer = 0, other = 0, total = 0;
  double sync_wait = 0;
  double host_to_device = 0, allreduce_total = 0;
  // The input copy's own time (host_to_device is its exposed part) and its bytes.
  double host_to_device_total = 0, host_to_device_bytes = 0;
  void add(const StageTimes& step);
  nlohmann::json to_json(std::int64_t steps) const;  // mean milliseconds per step and shares
};

class Trainer {
 public:
  Trainer(TrainerOptions options, const comm::Communicator& communicator, backend::Backend& backend);
  ~Trainer();
  // Trains to the end (or train.max_steps) and returns summary.json's content.
  nlohmann::json run();

  nn::Model& model() { return *model_; }
  // Where training starts (after a resume) or stands.
  const TrainingPosition& position() const { return position_; }
  // True when run() returned early because a stop signal (SIGTERM, SIGUSR1) reached a rank; the
  // checkpoint of the last step is written.
  bool stopped_by_signal() const { return stopped_by_signal_; }

 private:
  void end_of_epoch(std::int64_t epoch, double epoch_seconds, const StageTimes& epoch_times,
                    std::int64_t epoch_steps, double loss_sum, std::int64_t loss_samples);
  void save_checkpoint(bool final, const RunningTotals& totals);
  void print_breakdown_table(const nlohmann::json& breakdown);
  void write_report(Progress& progress);  // report.html (rank 0)
  void stop_on_signal(const RunningTotals& totals);
  void broadcast_from_root(Tensor& tensor);
  void synchronise_buffers();
  // Host (and GPU) metrics of the interval since the last call, for one epoch event; also folded
  // into the run's totals for summary.json.
  std::vector<std::pair<std::string, double>> close_metrics_interval(double seconds);
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
  std::int64_t steps_per_epoch_ = 0;
  std::vector<int> local_batches_;  // every rank's, from options_.batch_split
  std::int64_t global_batch_ = 0;
  TrainingPosition position_;
  std::string resumed_from_;
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
};

}  // namespace phalanx::train
