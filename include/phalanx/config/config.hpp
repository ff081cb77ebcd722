// The typed, validated configuration of a training run (docs/DESIGN.md §5). YAML is parsed once into
// these structs by config::load; nothing else in phalanx sees YAML.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "phalanx/config/words.hpp"

namespace phalanx::config {

// The words of the config's choice fields (config/words.hpp), each in the order messages list them.
enum class Device { Cpu, Cuda, Auto };
constexpr std::array<WordName<Device>, 3> words(Device) {
  return {{{Device::Cpu, "cpu"}, {Device::Cuda, "cuda"}, {Device::Auto, "auto"}}};
}
enum class DataCache { Auto, Rank, Node, None };
constexpr std::array<WordName<DataCache>, 4> words(DataCache) {
  return {{{DataCache::Auto, "auto"}, {DataCache::Rank, "rank"}, {DataCache::Node, "node"}, {DataCache::None, "none"}}};
}
enum class SourceLayout { Auto, Nhwc, Nchw, Nhw };
constexpr std::array<WordName<SourceLayout>, 4> words(SourceLayout) {
  return {{{SourceLayout::Auto, "auto"},
           {SourceLayout::Nhwc, "nhwc"},
           {SourceLayout::Nchw, "nchw"},
           {SourceLayout::Nhw, "nhw"}}};
}
enum class LabelEncoding { Auto, Index, OneHot };
constexpr std::array<WordName<LabelEncoding>, 3> words(LabelEncoding) {
  return {{{LabelEncoding::Auto, "auto"}, {LabelEncoding::Index, "index"}, {LabelEncoding::OneHot, "one_hot"}}};
}
enum class OptimizerType { Sgd, AdamW };
constexpr std::array<WordName<OptimizerType>, 2> words(OptimizerType) {
  return {{{OptimizerType::Sgd, "sgd"}, {OptimizerType::AdamW, "adamw"}}};
}
enum class ScheduleType { Constant, Step, Cosine, OneCycle };
constexpr std::array<WordName<ScheduleType>, 4> words(ScheduleType) {
  return {{{ScheduleType::Constant, "constant"},
           {ScheduleType::Step, "step"},
           {ScheduleType::Cosine, "cosine"},
           {ScheduleType::OneCycle, "one_cycle"}}};
}
// train.precision and train.activation_dtype; auto is resolved per rank (train/setup).
enum class Precision { Fp32, Bf16, Fp16, Auto };
constexpr std::array<WordName<Precision>, 4> words(Precision) {
  return {{{Precision::Fp32, "fp32"}, {Precision::Bf16, "bf16"}, {Precision::Fp16, "fp16"}, {Precision::Auto, "auto"}}};
}
enum class LossScale { Auto, Dynamic, None };
constexpr std::array<WordName<LossScale>, 3> words(LossScale) {
  return {{{LossScale::Auto, "auto"}, {LossScale::Dynamic, "dynamic"}, {LossScale::None, "none"}}};
}
enum class NonFinite { Stop, Skip };
constexpr std::array<WordName<NonFinite>, 2> words(NonFinite) {
  return {{{NonFinite::Stop, "stop"}, {NonFinite::Skip, "skip"}}};
}
enum class GradientDtype { Fp32, Bf16 };
constexpr std::array<WordName<GradientDtype>, 2> words(GradientDtype) {
  return {{{GradientDtype::Fp32, "fp32"}, {GradientDtype::Bf16, "bf16"}}};
}
enum class BatchSplitRule { Equal, Throughput };
constexpr std::array<WordName<BatchSplitRule>, 2> words(BatchSplitRule) {
  return {{{BatchSplitRule::Equal, "equal"}, {BatchSplitRule::Throughput, "throughput"}}};
}
enum class ResumeGlobalBatch { Keep, Change };
constexpr std::array<WordName<ResumeGlobalBatch>, 2> words(ResumeGlobalBatch) {
  return {{{ResumeGlobalBatch::Keep, "keep"}, {ResumeGlobalBatch::Change, "change"}}};
}
enum class LearningRateRule { Keep, Linear, Sqrt };
constexpr std::array<WordName<LearningRateRule>, 3> words(LearningRateRule) {
  return {{{LearningRateRule::Keep, "keep"}, {LearningRateRule::Linear, "linear"}, {LearningRateRule::Sqrt, "sqrt"}}};
}


// One entry of an explicit layer list. `type` is one of: conv, linear, relu, max_pool,
// avg_pool, global_avg_pool, batch_norm, dropout, flatten, residual, and the activations silu,
// relu6, hardswish, hardsigmoid, sigmoid, gelu.
struct LayerSpec {
  std::string type;
  std::string name;          // parameter names in checkpoints; generated when empty
  int out_channels = 0;      // conv
  int kernel = 3;            // conv, pools
  int stride = 1;            // conv, pools (pools default to kernel when 0)
  int padding = 0;           // conv, pools
  int groups = 1;            // conv: as torch.nn.Conv2d (depthwise when equal to the input channels)
  int dilation = 1;          // conv: spacing of the kernel taps, as torch.nn.Conv2d
  bool bias = true;          // conv, linear
  int out_features = 0;      // linear
  float probability = 0.5f;  // dropout
  // residual: a main path and an optional shortcut path; output = main(x) + shortcut(x)
  // (identity when the shortcut is empty), followed by ReLU when `relu_after` is set.
  std::vector<LayerSpec> main;
  std::vector<LayerSpec> shortcut;
  bool relu_after = true;
  // residual, inverted_residual: probability of dropping the main path of a sample in training
  // (torchvision.ops.StochasticDepth, mode "row"); 0 keeps it always.
  float stochastic_depth = 0.0f;
  // squeeze_excitation (torchvision.ops.SqueezeExcitation): channels of fc1, the activation after
  // fc1 and the one that makes the scale.
  int squeeze_channels = 0;
  std::string activation = "relu";  // squeeze_excitation; inverted_residual (default there: relu6)
  std::string scale_activation = "sigmoid";
  // inverted_residual: expanded channels = round(input channels * expand_ratio), and the ratio of
  // the expanded channels its squeeze-and-excitation squeezes to (0: none).
  float expand_ratio = 1.0f;
  float squeeze_excitation = 0.0f;
  // batch_norm: as torch.nn.BatchNorm2d's momentum and eps. Set by presets (torchvision's
  // MobileNetV3 uses 0.01 and 1e-3); not a config key.
  float batch_norm_momentum = 0.1f;
  float batch_norm_epsilon = 1e-5f;
  // gelu: "none" (the exact erf form, torch's default) or "tanh", as torch.nn.GELU(approximate).
  std::string approximate = "none";

  friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
};

struct ModelConfig {
  std::string preset;             // fmnist_cnn | lenet5 | resnet20, or empty with `layers`
  std::vector<LayerSpec> layers;  // explicit layer list when preset is empty
  // Weights to start from (a safetensors file or a phalanx checkpoint; empty: the seeded
  // initialisation): set at the start of training, not on a resume (docs/CONFIG.md).
  std::string init_from;

  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

// torchvision's RandomErasing(p, scale, ratio, value=0), the last augmentation step (0: off).
struct RandomErasingConfig {
  double probability = 0.0;                 // chance that a sample gets a rectangle erased
  std::array<double, 2> scale{0.02, 0.33};  // erased area / image area, within (0, 1]
  std::array<double, 2> ratio{0.3, 3.3};    // erased height / width, > 0 (drawn log-uniformly)

  friend bool operator==(const RandomErasingConfig&, const RandomErasingConfig&) = default;
};

// torchvision's RandAugment(num_ops, magnitude, num_magnitude_bins); num_ops 0: off.
struct RandAugmentConfig {
  int num_ops = 0;          // ops per image, at most 4 (torchvision's default 2)
  int magnitude = 9;        // the magnitude bin, in [0, magnitude_bins)
  int magnitude_bins = 31;  // >= 2

  friend bool operator==(const RandAugmentConfig&, const RandAugmentConfig&) = default;
};

// torchvision's RandomResizedCrop(size, scale, ratio): a random box of the stored image resized
// (bilinear) to size x size, the first augmentation step. `size` is the training size: the model's
// input, to which evaluation resizes and centre-crops (DataConfig::eval_resize).
struct RandomResizedCropConfig {
  int size = 0;                                       // > 0, at most the stored image's sides
  std::array<double, 2> scale{0.08, 1.0};             // box area / image area, within (0, 1]
  std::array<double, 2> ratio{3.0 / 4.0, 4.0 / 3.0};  // box width / height, > 0 (log-uniform)

  friend bool operator==(const RandomResizedCropConfig&, const RandomResizedCropConfig&) = default;
};

// Training-time augmentation, applied by the loader thread of every rank (never to evaluation).
// Each choice is a pure function of (seed, epoch, sample index): see data/augmentation.hpp.
struct AugmentConfig {
  std::optional<RandomResizedCropConfig> random_resized_crop;  // absent: the stored size, uncropped
  int random_crop_padding = 0;   // zero-pad each side by this much, crop back at a random offset
  bool horizontal_flip = false;  // mirror left-right with probability 0.5
  int cutout = 0;                // side of one zeroed square at a random centre (0: off)
  RandomErasingConfig random_erasing;
  bool trivial_augment = false;  // torchvision's TrivialAugmentWide (31 bins), after crop and flip
  RandAugmentConfig rand_augment;  // or RandAugment there; not both

  friend bool operator==(const AugmentConfig&, const AugmentConfig&) = default;
};

// A dataset inside an HDF5 file, written FILE:DATASET in data.source (docs/DATA.md).
struct DatasetLocation {
  std::string file;
  std::string dataset;  // absolute HDF5 path, e.g. "/x_train"

  bool empty() const { return file.empty(); }
  std::string text() const { return file + ":" + dataset; }  // as written in the config
  friend bool operator==(const DatasetLocation&, const DatasetLocation&) = default;
};

// One split of a mapped source: its images and its labels; both empty when the split is absent.
struct SourceSplitConfig {
  DatasetLocation images, labels;

  bool empty() const { return images.empty(); }
  friend bool operator==(const SourceSplitConfig&, const SourceSplitConfig&) = default;
};

// data.source: a user's own HDF5 files read in place, in whatever layout they were written.
struct SourceConfig {
  SourceSplitConfig train, test, val;  // train required; test or test_fraction; val optional
  double val_fraction = 0.0;           // carved from train (seeded, stratified) when val is absent
  double test_fraction = 0.0;          // carved from train when test is absent
  std::uint64_t split_seed = 0;        // the carving's seed, apart from `seed` so the test set stays put
  SourceLayout layout = SourceLayout::Auto;
  LabelEncoding labels = LabelEncoding::Auto;
  DatasetLocation classes_dataset;     // class names stored in a file, or ...
  std::vector<std::string> classes;    // ... given as a list; both empty: class_0, class_1, ...
  std::string statistics;              // mean/std sidecar file; empty: beside the run

  bool enabled() const { return !train.empty(); }
  friend bool operator==(const SourceConfig&, const SourceConfig&) = default;
};

struct DataConfig {
  std::string path;     // HDF5 dataset (docs/DESIGN.md §4), or empty with `source`
  SourceConfig source;  // a mapped source read in place (exactly one of path and source)
  std::string train_split = "train";
  std::string test_split = "test";
  int prefetch_batches = 4;  // loader ring depth
  AugmentConfig augment;
  // With data.augment.random_resized_crop: evaluation resizes the stored image's shorter side to
  // this (torchvision's Resize(eval_resize)), then centre-crops the training size; 0: the stored
  // shorter side (no resize, only the centre crop).
  int eval_resize = 0;
  DataCache cache = DataCache::Auto;  // docs/DATA.md
  double max_cache_gb = 0;     // memory budget per node for cached splits; 0: half the node's memory
  int stream_window_mb = 256;  // none: shuffle window per rank

  friend bool operator==(const DataConfig&, const DataConfig&) = default;
};

struct OptimizerConfig {
  OptimizerType type = OptimizerType::Sgd;
  double learning_rate = 0.01;
  double momentum = 0.9;  // sgd
  bool nesterov = false;  // sgd
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // adamw

  friend bool operator==(const OptimizerConfig&, const OptimizerConfig&) = default;
};

struct ScheduleConfig {
  ScheduleType type = ScheduleType::Constant;
  double warmup_epochs = 0;       // linear warm-up from warmup_start_factor * lr
  double warmup_start_factor = 0.1;
  double step_epochs = 30;               // step: multiply by gamma every step_epochs
  double gamma = 0.1;                    // step
  double minimum_factor = 0.0;           // cosine: final lr = minimum_factor * lr
  double one_cycle_peak_fraction = 0.3;  // one_cycle: share of steps spent rising
  double one_cycle_div_factor = 25.0;    // initial lr = max lr / div_factor
  double one_cycle_final_div_factor = 1e4;

  friend bool operator==(const ScheduleConfig&, const ScheduleConfig&) = default;
};

// An exponential moving average of the weights and batch-norm buffers (train.ema), kept beside the
// trained weights and evaluated with them, as torchvision's ExponentialMovingAverage (use_buffers).
struct EmaConfig {
  double decay = 0.999;  // in (0, 1)
  int every_steps = 1;   // update after every this many optimizer steps
  bool warmup = true;    // effective decay min(decay, (1 + u) / (10 + u)), u the updates so far

  friend bool operator==(const EmaConfig&, const EmaConfig&) = default;
};

// Stop training when an evaluated metric stops improving (train.early_stop).
struct EarlyStopConfig {
  std::string metric = "test_accuracy";  // accuracies are maximised, losses minimised
  int patience = 1;                      // evaluations without improvement before the stop
  double min_delta = 0.0;                // an improvement is a change by more than this

  friend bool operator==(const EarlyStopConfig&, const EarlyStopConfig&) = default;
};

// Mixup and CutMix of the training batches (train.mixup), as timm's Mixup in its 'batch' mode: one
// draw per step from (seed, step), the same on every rank; each rank mixes its own local batch.
// An alpha of 0 (absent) turns its method off; both off: no mixing.
struct MixupConfig {
  double mixup_alpha = 0.0;         // Beta(alpha, alpha) of mixup's blend weight
  double cutmix_alpha = 0.0;        // Beta(alpha, alpha) of the area CutMix keeps
  double probability = 1.0;         // chance that a step's batch is mixed at all
  double switch_probability = 0.5;  // with both alphas: chance of CutMix rather than mixup

  bool enabled() const { return mixup_alpha > 0 || cutmix_alpha > 0; }
  friend bool operator==(const MixupConfig&, const MixupConfig&) = default;
};

struct TrainConfig {
  int epochs = 1;
  std::optional<std::int64_t> max_steps;  // stop early after this many optimizer steps
  int batch_size = 64;                    // per rank
  // train.batch_size: auto — the largest batch that fits each GPU, found at start (the CLI then
  // sets batch_size and clears this before the Trainer sees the config).
  bool batch_size_auto = false;
  // Micro-batches per step and rank (gradient accumulation: one all-reduce and one update per
  // step). 0 (auto): one, unless a resume on fewer ranks gives a rank a local batch larger than
  // batch_size, then as many as keep each micro-batch within batch_size.
  int accumulation_steps = 0;
  double label_smoothing = 0.0;
  int log_every_steps = 50;
  Precision precision = Precision::Fp32;  // fp16 on GPU ranks only
  LossScale loss_scale = LossScale::Auto;  // auto: dynamic for fp16, else none
  double loss_scale_initial = 65536.0;  // first scale of dynamic loss scaling
  // What a step whose summed gradients hold an inf or NaN does (train.nonfinite): stop the run
  // naming the step and the first layer, or skip the update on every rank and count it.
  NonFinite nonfinite = NonFinite::Stop;
  // How ranks hold activations (train.activation_dtype): fp32, auto or the value of precision.
  Precision activation_dtype = Precision::Fp32;
  // true: GPU convolutions take algorithms whose results are the same bits on every call (where a
  // shape has one); false lets them take the fastest of any kind (train.deterministic)
  bool deterministic = true;
  // Parameters not updated (train.freeze): name prefixes in phalanx spelling ('/'; torch's '.'
  // is read as '/'), each matching whole name components ("layer1" is not "layer10").
  std::vector<std::string> freeze;
  // Clip the summed gradients to this global L2 norm before each update, as
  // torch.nn.utils.clip_grad_norm_ (train.clip_grad_norm); absent: no clipping.
  std::optional<double> clip_grad_norm;
  std::optional<EmaConfig> ema;               // absent: no average
  std::optional<EarlyStopConfig> early_stop;  // absent: train all epochs
  MixupConfig mixup;  // train.mixup

  friend bool operator==(const TrainConfig&, const TrainConfig&) = default;
};

struct CheckpointConfig {
  std::int64_t every_steps = 0;  // 0: only at the end
  int keep = 3;                  // step-<N>.h5 files kept (latest.h5 always)
  std::string keep_best;         // a metric: checkpoints/best.h5 holds its best evaluation; empty: none

  friend bool operator==(const CheckpointConfig&, const CheckpointConfig&) = default;
};

struct DistributedConfig {
  double bucket_mb = 25.0;
  double timeout_s = 300.0;
  GradientDtype grad_dtype = GradientDtype::Fp32;  // what gradients travel as over NCCL
  // How the global batch is cut into local batches (docs/CONFIG.md): equal (train.batch_size per
  // rank) or throughput (measured at start); local_batches, when given, is the split itself.
  BatchSplitRule batch_split = BatchSplitRule::Equal;
  std::vector<int> local_batches;     // one per rank, each >= 1; empty: by batch_split

  friend bool operator==(const DistributedConfig&, const DistributedConfig&) = default;
};

// Resuming on another number of ranks (docs/CHECKPOINTS.md, "Elastic resume"). keep: the resumed
// run takes the checkpoint's global batch whatever the world size, cut into local batches, so
// its trajectory continues; change: the global batch follows train.batch_size (or
// distributed.local_batches) on the new ranks, and the learning rate follows learning_rate_rule.
struct ElasticConfig {
  ResumeGlobalBatch global_batch = ResumeGlobalBatch::Keep;
  LearningRateRule learning_rate_rule = LearningRateRule::Keep;  // with change only

  friend bool operator==(const ElasticConfig&, const ElasticConfig&) = default;
};

// Observability (docs/OBSERVABILITY.md): how many steps after warm-up go into trace.json.
struct TraceConfig {
  std::int64_t steps = 20;  // 0: no trace.json

  friend bool operator==(const TraceConfig&, const TraceConfig&) = default;
};

// Evaluation (eval.top_k): the k of the top-k accuracies reported besides top-1; top-5 is
// reported whenever the dataset has more than 5 classes. Each k is checked against the
// dataset's classes once the data is known.
struct EvaluationConfig {
  std::vector<int> top_k;

  friend bool operator==(const EvaluationConfig&, const EvaluationConfig&) = default;
};

struct Config {
  std::string name = "run";
  std::uint64_t seed = 0;
  Device device = Device::Auto;
  int threads = 0;              // per rank; 0: docs/DESIGN.md §3 rule / OMP_NUM_THREADS
  ModelConfig model;
  DataConfig data;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  TrainConfig train;
  CheckpointConfig checkpoint;
  DistributedConfig distributed;
  ElasticConfig elastic;
  TraceConfig trace;
  EvaluationConfig eval;

  // Field-by-field equality: what parse(to_yaml(c)) == c and the cross-rank check rely on.
  friend bool operator==(const Config&, const Config&) = default;
};

// Parses YAML text (`source_name` is used in messages: the file path) and applies `--set
// key=value` overrides (dotted keys, value parsed as YAML). Throws an InvalidInput Error that
// names the file and key on any unknown key ("did you mean ..."), wrong type or out-of-range value.
Config parse(const std::string& yaml_text, const std::string& source_name,
             const std::vector<std::string>& overrides = {});
Config load(const std::string& path, const std::vector<std::string>& overrides = {});
// Only the data.source block of a YAML file (a training config, or one holding just data.source),
// validated as in a config; for `phalanx data import-hdf5`.
SourceConfig load_data_source(const std::string& path);

// The resolved configuration as YAML (every key, defaults filled in; each layer with the keys
// of its type); parse(to_yaml(c)) == c for every c that parse can produce.
std::string to_yaml(const Config& config);

// "line N of the resolved config is 'x' here but 'y' <where_reference>" for the first line where
// two to_yaml texts differ, so mismatch errors show the key at fault.
std::string first_difference(const std::string& yaml, const std::string& reference_yaml,
                             const std::string& where_reference);

// A stable hash of the resolved config, compared across ranks.
std::uint64_t hash(const Config& config);

// Levenshtein-based suggestion among `candidates`, or empty when nothing is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace phalanx::config
