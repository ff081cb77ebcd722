// Checkpoints (docs/DESIGN.md §4): HDF5 with PyTorch state_dict names and layouts, written to a
// temporary name and renamed so a crash never leaves a half file under the real name, and sealed
// (checkpoint_seal.hpp): readers refuse a file changed since writing before HDF5 parses it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "phalanx/nn/parameter_registry.hpp"
#include "phalanx/optim/loss_scaler.hpp"
#include "phalanx/optim/optimizer.hpp"
#include "phalanx/train/metric_watch.hpp"
#include "phalanx/train/running_totals.hpp"

namespace phalanx::train {

// Where training stands: the next update is number `global_step` (0-based) and uses batch
// `step_in_epoch` of `epoch`.
struct TrainingPosition {
  std::int64_t global_step = 0;
  std::int64_t epoch = 0;
  std::int64_t step_in_epoch = 0;
  std::int64_t samples_seen = 0;
};

// One tensor of a checkpoint's /model group: its name below /model ("layer1/0/conv1/weight").
struct ModelTensor {
  std::string name;
  Shape shape;
  std::vector<float> values;
};

// The weight average (train.ema) on the host: /ema/<layer>/<param> (torch's names and layouts, as
// /model) and /state/ema_updates.
struct WeightAverageState {
  std::vector<float> parameters;  // flat, in the registry's layout
  std::vector<float> buffers;
  std::int64_t updates = 0;
};

// What a checkpoint holds besides weights, optimizer and position, each part only when the run has it.
struct CheckpointExtras {
  std::optional<WeightAverageState> average;
  std::optional<MetricWatchState> early_stop;  // /state/early_stop/...
  std::optional<MetricWatchState> keep_best;   // /state/keep_best/...
  // The root attribute data_order: how the training split's samples were ordered (ShardOrder::describe).
  std::string data_order;
  // The root attribute train_samples: the training split's sample count, which the epoch's order
  // is a function of. 0: not written.
  std::int64_t train_samples = 0;
};

struct CheckpointHeader {
  std::string path;
  int version = 0;
  TrainingPosition position;
  int world_size = 0;
  std::uint64_t seed = 0;
  std::string optimizer_type;
  std::string config_text;                           // the resolved YAML of the run that wrote it
  std::optional<optim::LossScalerState> loss_scale;  // present when the run scaled its loss
  std::vector<int> local_batches;                    // attribute: the batch split, one per rank (empty: none)
  // The samples of one update over all ranks: the attribute, or (older checkpoints) the sum of
  // local_batches; 0 when neither is stored (stored_global_batch reads the config then).
  std::int64_t global_batch = 0;
  // The schedule's peak rate when it is not the config's optimizer.learning_rate (after a resume
  // with elastic.global_batch: change); 0: the config's.
  double learning_rate = 0;
  // One per rank; empty: a checkpoint written before the totals were stored.
  std::vector<RunningTotals> running_totals;
  // Updates train.nonfinite: skip left out without a loss scaler (AdamW counts only the others).
  std::int64_t nonfinite_skipped_steps = 0;
  bool has_average = false;                    // an /ema group (train.ema)
  std::optional<MetricWatchState> early_stop;  // train.early_stop's state, once evaluated
  std::optional<MetricWatchState> keep_best;   // checkpoint.keep_best's state, once evaluated
  // How the run took each epoch's samples (ShardOrder::describe); empty: a checkpoint written
  // before the order was stored.
  std::string data_order;
  // The training split's sample count; 0: a checkpoint written before it was stored.
  std::int64_t train_samples = 0;
  // The seal's XXH64 of the file's contents (checked when it was opened); 0: a checkpoint written
  // before seals. Ranks that each open "the same" path compare it: they must hold the same file.
  std::uint64_t contents_hash = 0;
};

void write_checkpoint(const std::string& path, backend::Backend& backend, nn::ParameterRegistry& registry,
                      optim::Optimizer* optimizer, const TrainingPosition& position, int world_size,
                      std::uint64_t seed, const std::string& config_text,
                      const optim::LossScalerState* loss_scale = nullptr,
                      const std::vector<int>& local_batches = {},
                      const std::vector<RunningTotals>& running_totals = {}, double learning_rate = 0,
                      std::int64_t nonfinite_skipped_steps = 0, const CheckpointExtras& extras = {});

// Validates the file (HDF5, format, version, attributes) and reads the header; InvalidInput
// naming the file on any problem, e.g. a truncated file.
CheckpointHeader read_checkpoint_header(const std::string& path);

// The root's "format" attribute of the HDF5 file at `path` ("phalanx-checkpoint" in a checkpoint,
// "phalanx-dataset" in a dataset; none in a predictions file), opened with the same checks as a
// checkpoint; throws InvalidInput where the file or the attribute cannot be read.
std::optional<std::string> stored_file_format(const std::string& path);

// The checkpoint's global batch: header.global_batch, or for a checkpoint that stored no split,
// train.batch_size x world_size of its config (InvalidInput naming the file if that is unreadable).
std::int64_t stored_global_batch(const CheckpointHeader& header);

// Loads weights (and buffers) into the registry, and the optimizer state when `optimizer` is
// given; every name and shape must match the model (InvalidInput naming file and dataset).
void load_checkpoint(const std::string& path, backend::Backend& backend, nn::ParameterRegistry& registry,
                     optim::Optimizer* optimizer);

// A checkpoint open for reading: its seal checked and its header read at construction (the checks
// and messages of read_checkpoint_header), the file held open until destruction. A resume consults
// the header at several steps of its set-up (the batch size, the batch split, the trainer) before
// it loads the weights: one OpenCheckpoint passed down reads and checks the file once, and the
// weights come from the very file whose header was validated.
class OpenCheckpoint {
 public:
  explicit OpenCheckpoint(const std::string& path);
  ~OpenCheckpoint();
  OpenCheckpoint(const OpenCheckpoint&) = delete;
  OpenCheckpoint& operator=(const OpenCheckpoint&) = delete;

  const CheckpointHeader& header() const { return header_; }
  // load_checkpoint's work on the file held open: no second open, seal check or header parse.
  void load(backend::Backend& backend, nn::ParameterRegistry& registry, optim::Optimizer* optimizer) const;
  // Every float tensor under /model whatever the model (batch-norm num_batches_tracked left out),
  // in name order, checksums checked: what `model.init_from` and `checkpoint export` take.
  // `group` "/ema": the weight average's instead (InvalidInput naming the file when it has none).
  std::vector<ModelTensor> model_tensors(const std::string& group = "/model") const;
  // The weight average (train.ema) in the registry's layout, names and shapes checked as load's.
  WeightAverageState average(const nn::ParameterRegistry& registry) const;

 private:
  struct File;  // the HDF5 file handle (HDF5's headers stay out of this one)
  std::unique_ptr<File> file_;
  CheckpointHeader header_;
};

}  // namespace phalanx::train
