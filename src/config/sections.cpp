// Conversion of the YAML tree into the typed sections of Config, with the range rules of
// docs/DESIGN.md §5. Absent keys keep the defaults of config.hpp; every present key is checked.
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "conversion.hpp"
#include "phalanx/config/evaluated_metric.hpp"
#include "phalanx/core/error.hpp"
#include "schema.hpp"

namespace phalanx::config {
namespace {

constexpr Bound zero_inclusive{0.0, true};
constexpr Bound zero_exclusive{0.0, false};
constexpr Bound one_inclusive{1.0, true};
constexpr Bound one_exclusive{1.0, false};

// The mapping of one section and its dotted name, so each read below is one short line.
class Section {
 public:
  Section(const Reader& reader, const YAML::Node& root, const std::string& name)
      : reader_(reader), name_(name), node_(root[name]) {
    present_ = reader_.require_mapping(node_, name_);
    if (present_) reader_.check_keys(node_, name_, schema::section_keys(name_));
  }
  // A section nested in `parent` under `key` (data.augment), named by its dotted path.
  Section(const Section& parent, const std::string& key)
      : reader_(parent.reader_), name_(parent.key(key)), node_(parent[key]) {
    present_ = reader_.require_mapping(node_, name_);
    if (present_) reader_.check_keys(node_, name_, schema::section_keys(name_));
  }

  // The value of `key`, or an undefined node when the section or the key is absent.
  YAML::Node operator[](const std::string& key) const {
    return present_ ? node_[key] : YAML::Node(YAML::NodeType::Undefined);
  }
  std::string key(const std::string& key) const { return name_ + "." + key; }
  const YAML::Node& node() const { return node_; }
  const Reader& reader() const { return reader_; }

 private:
  const Reader& reader_;
  std::string name_;
  const YAML::Node node_;
  bool present_ = false;
};

bool has(const YAML::Node& node) {
  return node.IsDefined();
}

void read_model(const Section& section, ModelConfig& model) {
  const Reader& reader = section.reader();
  if (const YAML::Node preset = section["preset"]; has(preset) && !preset.IsNull()) {
    // An empty preset is how to_yaml writes "no preset", so it must read back as one; null
    // is how `--set model.preset=` clears the file's preset in favour of a layer list.
    const std::string name = reader.text(preset, section.key("preset"));
    if (!name.empty()) model.preset = reader.choice(preset, section.key("preset"), schema::model_presets());
  }
  model.layers = read_layer_list(reader, section["layers"], section.key("layers"));
  if (const YAML::Node value = section["init_from"]; has(value) && !value.IsNull())
    model.init_from = reader.text(value, section.key("init_from"));
  const std::string presets = join(schema::model_presets(), ", ");
  if (model.preset.empty() && model.layers.empty()) {
    reader.fail("model",
                "model: set either 'model.preset' (" + presets + ") or a non-empty 'model.layers' list",
                section.node());
  }
  if (!model.preset.empty() && !model.layers.empty()) {
    reader.fail("model", "model: 'model.preset' and 'model.layers' are both set; use one of them",
                section.node());
  }
}

// A range written [low, high]: two numbers within (lower, upper), low <= high.
std::array<double, 2> read_range(const Reader& reader, const YAML::Node& node, const std::string& key,
                                 std::optional<Bound> lower, std::optional<Bound> upper) {
  if (!node.IsSequence() || node.size() != 2)
    reader.fail(key, key + ": expected a range [low, high], got " + describe(node), node);
  const std::array<double, 2> range{reader.real(node[0], key, lower, upper),
                                    reader.real(node[1], key, lower, upper)};
  if (range[0] > range[1]) {
    reader.fail(key,
                key + ": the range is empty (low " + format_number(range[0]) + " > high " +
                    format_number(range[1]) + ")",
                node);
  }
  return range;
}

void read_random_erasing(const Section& section, RandomErasingConfig& erasing) {
  const Reader& reader = section.reader();
  if (const YAML::Node value = section["probability"]; has(value))
    erasing.probability = reader.real(value, section.key("probability"), zero_inclusive, one_inclusive);
  if (const YAML::Node value = section["scale"]; has(value))
    erasing.scale = read_range(reader, value, section.key("scale"), zero_exclusive, one_inclusive);
  if (const YAML::Node value = section["ratio"]; has(value))
    erasing.ratio = read_range(reader, value, section.key("ratio"), zero_exclusive, std::nullopt);
}

void read_rand_augment(const Section& section, RandAugmentConfig& rand_augment) {
  const Reader& reader = section.reader();
  if (const YAML::Node value = section["num_ops"]; has(value)) {
    rand_augment.num_ops = reader.int_value(value, section.key("num_ops"), 0);
    // The input kernels carry a fixed number of op slots per image.
    if (rand_augment.num_ops > 4)
      reader.fail(
          section.key("num_ops"),
          section.key("num_ops") + ": at most 4 ops per image, got " + std::to_string(rand_augment.num_ops),
          value);
  }
  if (const YAML::Node value = section["magnitude_bins"]; has(value))
    rand_augment.magnitude_bins = reader.int_value(value, section.key("magnitude_bins"), 2);
  if (const YAML::Node value = section["magnitude"]; has(value)) {
    rand_augment.magnitude = reader.int_value(value, section.key("magnitude"), 0);
    if (rand_augment.magnitude >= rand_augment.magnitude_bins)
      reader.fail(section.key("magnitude"),
                  section.key("magnitude") + ": a bin below magnitude_bins (" +
                      std::to_string(rand_augment.magnitude_bins) + "), got " +
                      std::to_string(rand_augment.magnitude),
                  value);
  } else if (rand_augment.magnitude >= rand_augment.magnitude_bins) {
    reader.fail(section.key("magnitude_bins"),
                section.key("magnitude_bins") + ": must exceed the magnitude bin " +
                    std::to_string(rand_augment.magnitude) + " (set magnitude below it)",
                section.node());
  }
}

// Present turns RandomResizedCrop on and needs its size; null (how to_yaml writes "off") leaves it off.
void read_random_resized_crop(const Section& section, std::optional<RandomResizedCropConfig>& crop) {
  const YAML::Node node = section.node();
  if (!has(node) || node.IsNull()) return;
  const Reader& reader = section.reader();
  crop.emplace();
  if (const YAML::Node value = section["size"]; has(value))
    crop->size = reader.int_value(value, section.key("size"), 1);
  else
    reader.fail(section.key("size"),
                section.key("size") + " is required: the training size (the model's input is size x size)",
                node);
  if (const YAML::Node value = section["scale"]; has(value))
    crop->scale = read_range(reader, value, section.key("scale"), zero_exclusive, one_inclusive);
  if (const YAML::Node value = section["ratio"]; has(value))
    crop->ratio = read_range(reader, value, section.key("ratio"), zero_exclusive, std::nullopt);
}

void read_augment(const Section& section, AugmentConfig& augment) {
  const Reader& reader = section.reader();
  read_random_resized_crop(Section(section, "random_resized_crop"), augment.random_resized_crop);
  read_random_erasing(Section(section, "random_erasing"), augment.random_erasing);
  read_rand_augment(Section(section, "rand_augment"), augment.rand_augment);
  if (const YAML::Node value = section["trivial_augment"]; has(value)) {
    augment.trivial_augment = reader.boolean(value, section.key("trivial_augment"));
    if (augment.trivial_augment && augment.rand_augment.num_ops > 0)
      reader.fail(section.key("trivial_augment"),
                  section.key("trivial_augment") + ": TrivialAugment and RandAugment (" +
                      section.key("rand_augment") + ") are both on; use one of them",
                  value);
  }
  if (const YAML::Node value = section["random_crop_padding"]; has(value)) {
    augment.random_crop_padding = reader.int_value(value, section.key("random_crop_padding"), 0);
    // Two random crops in a row: the resized crop already picks the box's place, and no reference
    // recipe pads after it; a padding left over from a recipe without it is surely a mistake.
    if (augment.random_crop_padding > 0 && augment.random_resized_crop)
      reader.fail(section.key("random_crop_padding"),
                  section.key("random_crop_padding") + ": a padded random crop and " +
                      section.key("random_resized_crop") +
                      " are both on; the resized crop already places its box at random, use one of them",
                  value);
  }
  if (const YAML::Node value = section["horizontal_flip"]; has(value)) {
    augment.horizontal_flip = reader.boolean(value, section.key("horizontal_flip"));
  }
  if (const YAML::Node value = section["cutout"]; has(value)) {
    augment.cutout = reader.int_value(value, section.key("cutout"), 0);
  }
}

// FILE:DATASET, split at the last colon (a dataset path has none; a file path may, rarely).
DatasetLocation read_location(const Reader& reader, const YAML::Node& node, const std::string& key) {
  const std::string text = reader.text(node, key);
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    reader.fail(key, key + ": expected FILE:DATASET (e.g. /shared/x_train.h5:/x), got '" + text + "'", node);
  DatasetLocation location;
  location.file = text.substr(0, colon);
  // Appended rather than inserted: GCC 12 warns falsely (-Wrestrict) on insert(0, "/") at -O3.
  if (text[colon + 1] != '/') location.dataset = "/";
  location.dataset.append(text, colon + 1, std::string::npos);
  return location;
}

void read_source_split(const Section& section, SourceSplitConfig& split) {
  const Reader& reader = section.reader();
  if (const YAML::Node value = section["images"]; has(value))
    split.images = read_location(reader, value, section.key("images"));
  if (const YAML::Node value = section["labels"]; has(value))
    split.labels = read_location(reader, value, section.key("labels"));
  if (split.images.empty() != split.labels.empty()) {
    const std::string missing = split.images.empty() ? "images" : "labels";
    reader.fail(section.key(missing), section.key(missing) + " is required (a split needs images and labels)",
                section.node());
  }
}

void read_source(const Section& section, SourceConfig& source) {
  const Reader& reader = section.reader();
  read_source_split(Section(section, "train"), source.train);
  read_source_split(Section(section, "test"), source.test);
  read_source_split(Section(section, "val"), source.val);
  // Carving more than half of train away leaves too little to train on; it is surely a typo.
  constexpr Bound half{0.5, true};
  if (const YAML::Node value = section["val_fraction"]; has(value))
    source.val_fraction = reader.real(value, section.key("val_fraction"), zero_inclusive, half);
  if (const YAML::Node value = section["test_fraction"]; has(value))
    source.test_fraction = reader.real(value, section.key("test_fraction"), zero_inclusive, half);
  if (const YAML::Node value = section["split_seed"]; has(value))
    source.split_seed = reader.unsigned_integer(value, section.key("split_seed"));
  if (const YAML::Node value = section["layout"]; has(value))
    source.layout = reader.word<SourceLayout>(value, section.key("layout"));
  if (const YAML::Node value = section["labels"]; has(value))
    source.labels = reader.word<LabelEncoding>(value, section.key("labels"));
  if (const YAML::Node value = section["classes"]; has(value) && !value.IsNull()) {
    const std::string key = section.key("classes");
    if (value.IsSequence()) {
      for (std::size_t index = 0; index < value.size(); ++index) {
        source.classes.push_back(reader.text(value[index], key + "[" + std::to_string(index) + "]"));
        if (source.classes.back().empty())
          reader.fail(key, key + "[" + std::to_string(index) + "] must not be empty", value[index]);
      }
      if (source.classes.empty()) reader.fail(key, key + ": an empty list names no class", value);
      // Two classes of one name would be read as one in reports and predictions.
      std::unordered_map<std::string, std::size_t> first_index;
      for (std::size_t index = 0; index < source.classes.size(); ++index)
        if (const auto [found, inserted] = first_index.emplace(source.classes[index], index); !inserted)
          reader.fail(key,
                      key + "[" + std::to_string(found->second) + "] and [" + std::to_string(index) +
                          "] are both '" + source.classes[index] + "'",
                      value[index]);
    } else {
      source.classes_dataset = read_location(reader, value, key);
    }
  }
  if (const YAML::Node value = section["statistics"]; has(value))
    source.statistics = reader.text(value, section.key("statistics"));

  if (!section.node().IsDefined() || section.node().IsNull()) return;
  if (source.train.empty())
    reader.fail(section.key("train"),
                section.key("train") + " is required: {images: FILE:DATASET, labels: FILE:DATASET}",
                section.node());
  if (!source.test.empty() && source.test_fraction > 0)
    reader.fail(section.key("test_fraction"),
                section.key("test_fraction") + " carves a test split from train, but " + section.key("test") +
                    " is given too; use one of them",
                section.node());
  if (source.test.empty() && source.test_fraction <= 0)
    reader.fail(section.key("test"),
                section.key("test") + " is required, or " + section.key("test_fraction") +
                    " to carve one from train when the files have no test split",
                section.node());
  if (!source.val.empty() && source.val_fraction > 0)
    reader.fail(section.key("val_fraction"),
                section.key("val_fraction") + " carves a val split from train, but " + section.key("val") +
                    " is given too; use one of them",
                section.node());
  if (source.val_fraction + source.test_fraction > 0.5)
    reader.fail(section.key("val_fraction"),
                section.key("val_fraction") + " + " + section.key("test_fraction") +
                    " carve more than half of train away (at most 0.5 in all)",
                section.node());
}

void read_data(const Section& section, DataConfig& data) {
  const Reader& reader = section.reader();
  if (const YAML::Node path = section["path"]; has(path)) data.path = reader.text(path, section.key("path"));
  read_source(Section(section, "source"), data.source);
  if (data.path.empty() && !data.source.enabled()) {
    reader.fail("data.path",
                "data.path is required (the HDF5 dataset file, see 'phalanx data'), or data.source to read "
                "your own HDF5 files in place",
                section.node());
  }
  if (!data.path.empty() && data.source.enabled()) {
    reader.fail("data.source",
                "data.path and data.source are both set; use data.path for a phalanx dataset file or "
                "data.source for your own HDF5 files, not both",
                section["source"]);
  }
  const auto read_split = [&](const std::string& key, std::string& split) {
    if (const YAML::Node value = section[key]; has(value)) {
      split = reader.text(value, section.key(key));
      if (split.empty()) reader.fail(section.key(key), section.key(key) + " must not be empty", value);
    }
  };
  read_split("train_split", data.train_split);
  read_split("test_split", data.test_split);
  // A mapped source's splits are named train, test and val (carved or given).
  if (data.source.enabled()) {
    for (const auto& [key, split] :
         {std::pair<std::string, const std::string*>{"train_split", &data.train_split},
          std::pair<std::string, const std::string*>{"test_split", &data.test_split}}) {
      const bool has_val = !data.source.val.empty() || data.source.val_fraction > 0;
      if (*split != "train" && *split != "test" && !(*split == "val" && has_val))
        reader.fail(section.key(key),
                    section.key(key) + " is '" + *split +
                        "', but data.source has only the splits train, test" + (has_val ? ", val" : ""),
                    section[key]);
    }
  }
  if (const YAML::Node value = section["prefetch_batches"]; has(value)) {
    // Each prepared batch is a whole local batch of images: past a few thousand, memory, not
    // the loader, is what a larger ring would test.
    data.prefetch_batches = static_cast<int>(reader.integer(value, section.key("prefetch_batches"), 1, 1024));
  }
  read_augment(Section(section, "augment"), data.augment);
  if (const YAML::Node value = section["eval_resize"]; has(value)) {
    data.eval_resize = reader.int_value(value, section.key("eval_resize"), 1);
    if (!data.augment.random_resized_crop)
      reader.fail(section.key("eval_resize"),
                  section.key("eval_resize") +
                      " resizes evaluation images to the training size data.augment.random_resized_crop "
                      "sets, and that is not set",
                  value);
    if (data.eval_resize < data.augment.random_resized_crop->size)
      reader.fail(section.key("eval_resize"),
                  section.key("eval_resize") + ": " + std::to_string(data.eval_resize) +
                      " is smaller than the centre crop of the training size " +
                      std::to_string(data.augment.random_resized_crop->size) +
                      " (data.augment.random_resized_crop.size)",
                  value);
  }
  if (const YAML::Node value = section["cache"]; has(value))
    data.cache = reader.word<DataCache>(value, section.key("cache"));
  if (const YAML::Node value = section["max_cache_gb"]; has(value))
    // An exabyte at most: the budget is counted in bytes in 64 bits.
    data.max_cache_gb = reader.real(value, section.key("max_cache_gb"), zero_inclusive, Bound{1e9, true});
  if (const YAML::Node value = section["stream_window_mb"]; has(value))
    data.stream_window_mb = reader.int_value(value, section.key("stream_window_mb"), 1);
}

void read_optimizer(const Section& section, OptimizerConfig& optimizer) {
  const Reader& reader = section.reader();
  if (const YAML::Node value = section["type"]; has(value)) {
    optimizer.type = reader.word<OptimizerType>(value, section.key("type"));
  }
  const std::optional<Bound> unbounded;
  const struct {
    const char* key;
    double* field;
    std::optional<Bound> lower, upper;
  } reals[] = {
      {"learning_rate", &optimizer.learning_rate, zero_exclusive, unbounded},
      {"momentum", &optimizer.momentum, zero_inclusive, one_exclusive},
      {"weight_decay", &optimizer.weight_decay, zero_inclusive, unbounded},
      {"beta1", &optimizer.beta1, zero_inclusive, one_exclusive},
      {"beta2", &optimizer.beta2, zero_inclusive, one_exclusive},
      {"epsilon", &optimizer.epsilon, zero_exclusive, unbounded},
  };
  for (const auto& real : reals) {
    if (const YAML::Node value = section[real.key]; has(value)) {
      *real.field = reader.real(value, section.key(real.key), real.lower, real.upper);
    }
  }
  if (const YAML::Node value = section["nesterov"]; has(value)) {
    optimizer.nesterov = reader.boolean(value, section.key("nesterov"));
  }
}

void read_schedule(const Section& section, ScheduleConfig& schedule) {
  const Reader& reader = section.reader();
  if (const YAML::Node value = section["type"]; has(value)) {
    schedule.type = reader.word<ScheduleType>(value, section.key("type"));
  }
  const std::optional<Bound> unbounded;
  const struct {
    const char* key;
    double* field;
    std::optional<Bound> lower, upper;
  } reals[] = {
      {"warmup_epochs", &schedule.warmup_epochs, zero_inclusive, unbounded},
      {"warmup_start_factor", &schedule.warmup_start_factor, zero_inclusive, one_inclusive},
      {"step_epochs", &schedule.step_epochs, zero_exclusive, unbounded},
      {"gamma", &schedule.gamma, zero_exclusive, unbounded},
      {"minimum_factor", &schedule.minimum_factor, zero_inclusive, one_inclusive},
      {"one_cycle_peak_fraction", &schedule.one_cycle_peak_fraction, zero_exclusive, one_exclusive},
      {"one_cycle_div_factor", &schedule.one_cycle_div_factor, zero_exclusive, unbounded},
      {"one_cycle_final_div_factor", &schedule.one_cycle_final_div_factor, zero_exclusive, unbounded},
  };
  for (const auto& real : reals) {
    if (const YAML::Node value = section[real.key]; has(value)) {
      *real.field = reader.real(value, section.key(real.key), real.lower, real.upper);
    }
  }
}

// Present (even empty) turns the average on; null (how to_yaml writes "off") leaves it off.
void read_ema(const Section& section, std::optional<EmaConfig>& ema) {
  const YAML::Node node = section.node();
  if (!has(node) || node.IsNull()) return;
  const Reader& reader = section.reader();
  ema.emplace();
  if (const YAML::Node value = section["decay"]; has(value))
    ema->decay = reader.real(value, section.key("decay"), zero_exclusive, one_exclusive);
  if (const YAML::Node value = section["every_steps"]; has(value))
    ema->every_steps = reader.int_value(value, section.key("every_steps"), 1);
  if (const YAML::Node value = section["warmup"]; has(value))
    ema->warmup = reader.boolean(value, section.key("warmup"));
}

// The metric is checked once train.ema is known (convert_config).
void read_early_stop(const Section& section, std::optional<EarlyStopConfig>& early_stop) {
  const YAML::Node node = section.node();
  if (!has(node) || node.IsNull()) return;
  const Reader& reader = section.reader();
  early_stop.emplace();
  if (const YAML::Node value = section["metric"]; has(value))
    early_stop->metric = reader.text(value, section.key("metric"));
  if (const YAML::Node value = section["patience"]; has(value))
    early_stop->patience = reader.int_value(value, section.key("patience"), 1);
  if (const YAML::Node value = section["min_delta"]; has(value))
    early_stop->min_delta = reader.real(value, section.key("min_delta"), zero_inclusive, std::nullopt);
}

// train.mixup: an alpha given must be > 0 (absent or null: that method off).
void read_mixup(const Section& section, MixupConfig& mixup) {
  const Reader& reader = section.reader();
  for (const auto& [key, field] : {std::pair{"mixup_alpha", &mixup.mixup_alpha},
                                   std::pair{"cutmix_alpha", &mixup.cutmix_alpha}}) {
    if (const YAML::Node value = section[key]; has(value) && !value.IsNull())
      *field = reader.real(value, section.key(key), zero_exclusive, std::nullopt);
  }
  for (const auto& [key, field] : {std::pair{"probability", &mixup.probability},
                                   std::pair{"switch_probability", &mixup.switch_probability}}) {
    if (const YAML::Node value = section[key]; has(value))
      *field = reader.real(value, section.key(key), zero_inclusive, one_inclusive);
  }
}

void read_train(const Section& section, TrainConfig& train) {
  const Reader& reader = section.reader();
  read_mixup(Section(section, "mixup"), train.mixup);
  if (const YAML::Node value = section["epochs"]; has(value)) {
    train.epochs = reader.int_value(value, section.key("epochs"), 1);
  }
  // Null is how to_yaml writes "no limit", and how `--set train.max_steps=null` removes one.
  if (const YAML::Node value = section["max_steps"]; has(value) && !value.IsNull()) {
    train.max_steps = reader.integer(value, section.key("max_steps"), 1);
  }
  if (const YAML::Node value = section["batch_size"]; has(value)) {
    train.batch_size_auto = value.IsScalar() && value.Scalar() == "auto";
    if (!train.batch_size_auto) train.batch_size = reader.int_value(value, section.key("batch_size"), 1);
  }
  if (const YAML::Node value = section["accumulation_steps"]; has(value)) {
    const bool automatic = value.IsScalar() && value.Scalar() == "auto";
    train.accumulation_steps = automatic ? 0 : reader.int_value(value, section.key("accumulation_steps"), 1);
  }
  if (const YAML::Node value = section["label_smoothing"]; has(value)) {
    train.label_smoothing = reader.real(value, section.key("label_smoothing"), zero_inclusive, one_exclusive);
  }
  if (const YAML::Node value = section["log_every_steps"]; has(value)) {
    train.log_every_steps = reader.int_value(value, section.key("log_every_steps"), 1);
  }
  if (const YAML::Node value = section["precision"]; has(value)) {
    train.precision = reader.word<Precision>(value, section.key("precision"));
  }
  if (const YAML::Node value = section["activation_dtype"]; has(value)) {
    train.activation_dtype = reader.word<Precision>(value, section.key("activation_dtype"));
    // Activations are held in fp32 or in the compute precision itself (a convolution's output
    // is then stored as it is computed); any other pair would add a conversion at every op. auto
    // is that precision where it can be (train::resolve_arithmetic); a reduced precision named
    // outright needs the same named as train.precision, not auto, which may resolve to fp32.
    const bool reduced = train.activation_dtype != Precision::Fp32 && train.activation_dtype != Precision::Auto;
    if (reduced && train.activation_dtype != train.precision)
      reader.fail(section.key("activation_dtype"),
                  section.key("activation_dtype") + ": " + name_of(train.activation_dtype) +
                      " must be fp32, auto or equal to train.precision, which is " + name_of(train.precision),
                  value);
    // Micro-batches slice the input and sum the parameter gradients in fp32 elements (auto
    // activations are fp32 then).
    if (reduced && train.accumulation_steps > 1)
      reader.fail(section.key("activation_dtype"),
                  section.key("activation_dtype") + ": " + name_of(train.activation_dtype) +
                      " cannot be combined with gradient accumulation (train.accumulation_steps: " +
                      std::to_string(train.accumulation_steps) + "); use fp32 activations",
                  value);
  }
  if (const YAML::Node value = section["deterministic"]; has(value)) {
    train.deterministic = reader.boolean(value, section.key("deterministic"));
  }
  if (const YAML::Node value = section["loss_scale"]; has(value)) {
    train.loss_scale = reader.word<LossScale>(value, section.key("loss_scale"));
  }
  if (const YAML::Node value = section["loss_scale_initial"]; has(value)) {
    train.loss_scale_initial =
        reader.real(value, section.key("loss_scale_initial"), zero_exclusive, std::nullopt);
  }
  if (const YAML::Node value = section["nonfinite"]; has(value)) {
    train.nonfinite = reader.word<NonFinite>(value, section.key("nonfinite"));
  }
  if (const YAML::Node value = section["freeze"]; has(value) && !value.IsNull()) {
    const std::string key = section.key("freeze");
    if (!value.IsSequence())
      reader.fail(
          key,
          key + " must be a list of parameter name prefixes, e.g. [conv1, layer1], not " + describe(value),
          value);
    for (std::size_t index = 0; index < value.size(); ++index) {
      const std::string entry_key = key + "[" + std::to_string(index) + "]";
      std::string prefix = reader.text(value[index], entry_key);
      // torch's spelling (layer1.0.conv1) reads as phalanx's (layer1/0/conv1).
      std::replace(prefix.begin(), prefix.end(), '.', '/');
      while (prefix.ends_with('/')) prefix.pop_back();
      if (prefix.empty() || prefix.starts_with('/'))
        reader.fail(entry_key,
                    entry_key + ": '" + reader.text(value[index], entry_key) +
                        "' is not a parameter name prefix (e.g. layer1 or layer1.0.conv1)",
                    value[index]);
      if (std::find(train.freeze.begin(), train.freeze.end(), prefix) == train.freeze.end())
        train.freeze.push_back(prefix);
    }
  }
  // Null is how to_yaml writes "no clipping", and how `--set train.clip_grad_norm=null` removes it.
  if (const YAML::Node value = section["clip_grad_norm"]; has(value) && !value.IsNull()) {
    train.clip_grad_norm = reader.real(value, section.key("clip_grad_norm"), zero_exclusive, std::nullopt);
  }
  read_ema(Section(section, "ema"), train.ema);
  read_early_stop(Section(section, "early_stop"), train.early_stop);
}

// checkpoint.keep_best or train.early_stop.metric: a metric evaluation records, an ema_ one only
// with train.ema (a top-k one is checked against the data's classes at start).
void require_evaluated_metric(const Reader& reader, const YAML::Node& node, const std::string& key,
                              const std::string& metric, bool with_average) {
  const std::optional<EvaluatedMetric> known = evaluated_metric(metric);
  if (!known)
    reader.fail(
        key,
        key + ": '" + metric + "' is not a metric the evaluation records (" + evaluated_metric_names() + ")",
        node);
  if (known->of_average && !with_average)
    reader.fail(key, key + ": '" + metric + "' is a metric of the weight average, and train.ema is not set",
                node);
}

void read_checkpoint(const Section& section, CheckpointConfig& checkpoint) {
  const Reader& reader = section.reader();
  if (const YAML::Node value = section["every_steps"]; has(value)) {
    checkpoint.every_steps = reader.integer(value, section.key("every_steps"), 0);
  }
  if (const YAML::Node value = section["keep"]; has(value)) {
    checkpoint.keep = reader.int_value(value, section.key("keep"), 1);
  }
  if (const YAML::Node value = section["keep_best"]; has(value) && !value.IsNull())
    checkpoint.keep_best = reader.text(value, section.key("keep_best"));
}

// A list of local batch sizes, one per rank (its length is checked against the world size at start).
std::vector<int> read_local_batches(const Reader& reader, const YAML::Node& list, const std::string& key) {
  if (!list.IsSequence())
    reader.fail(key, key + ": expected a list of local batch sizes, one per rank, got " + describe(list),
                list);
  std::vector<int> sizes;
  for (std::size_t index = 0; index < list.size(); ++index)
    sizes.push_back(reader.int_value(list[index], key + "[" + std::to_string(index) + "]", 1));
  return sizes;
}

void read_distributed(const Section& section, DistributedConfig& distributed) {
  const Reader& reader = section.reader();
  if (const YAML::Node value = section["bucket_mb"]; has(value)) {
    // Below 8 GiB: a bucket's floats are one MPI all-reduce, whose count is an int (8192 MiB would
    // be 2^31 floats).
    distributed.bucket_mb = reader.real(value, section.key("bucket_mb"), zero_exclusive, Bound{8191, true});
  }
  if (const YAML::Node value = section["timeout_s"]; has(value)) {
    distributed.timeout_s = reader.real(value, section.key("timeout_s"), zero_exclusive, std::nullopt);
  }
  if (const YAML::Node value = section["grad_dtype"]; has(value)) {
    distributed.grad_dtype = reader.word<GradientDtype>(value, section.key("grad_dtype"));
  }
  if (const YAML::Node value = section["batch_split"]; has(value)) {
    distributed.batch_split = reader.word<BatchSplitRule>(value, section.key("batch_split"));
  }
  if (const YAML::Node value = section["local_batches"]; has(value)) {
    distributed.local_batches = read_local_batches(reader, value, section.key("local_batches"));
  }
}

void read_elastic(const Section& section, ElasticConfig& elastic) {
  const Reader& reader = section.reader();
  if (const YAML::Node value = section["global_batch"]; has(value))
    elastic.global_batch =
        reader.word<ResumeGlobalBatch>(value, section.key("global_batch"));
  if (const YAML::Node value = section["learning_rate_rule"]; has(value))
    elastic.learning_rate_rule =
        reader.word<LearningRateRule>(value, section.key("learning_rate_rule"));
}

// The k of each top-k accuracy, each >= 1 (the dataset's class count bounds it at start).
void read_evaluation(const Section& section, EvaluationConfig& evaluation) {
  const Reader& reader = section.reader();
  const YAML::Node list = section["top_k"];
  if (!has(list) || list.IsNull()) return;
  const std::string key = section.key("top_k");
  if (!list.IsSequence())
    reader.fail(key, key + ": expected a list of k values >= 1, e.g. [5], got " + describe(list), list);
  for (std::size_t index = 0; index < list.size(); ++index)
    evaluation.top_k.push_back(reader.int_value(list[index], key + "[" + std::to_string(index) + "]", 1));
  // Sorted, each k once: in n log n (a search per value was 9.5 s for a list of 300,000).
  std::sort(evaluation.top_k.begin(), evaluation.top_k.end());
  evaluation.top_k.erase(std::unique(evaluation.top_k.begin(), evaluation.top_k.end()),
                         evaluation.top_k.end());
}

void read_trace(const Section& section, TraceConfig& trace) {
  if (const YAML::Node value = section["steps"]; has(value))
    trace.steps = section.reader().integer(value, section.key("steps"), 0, 100000);
}

}  // namespace

SourceConfig convert_data_source(const Reader& reader, const YAML::Node& root) {
  // The file may be a whole training config, of which data.source is imported: its keys are
  // checked as train checks them (a misspelt key was passed over here, and refused only there).
  reader.check_keys(root, "", schema::top_level_keys());
  const Section data(reader, root, "data");
  SourceConfig source;
  read_source(Section(data, "source"), source);
  if (!source.enabled())
    reader.fail("data.source",
                "data.source is required here: {train: {images: FILE:DATASET, labels: FILE:DATASET}, ...}",
                root);
  if (const YAML::Node path = data["path"]; has(path))
    reader.fail("data.source",
                "data.path and data.source are both set; data.source is what is imported (drop data.path)",
                data.node());
  return source;
}

Config convert_config(const Reader& reader, const YAML::Node& root) {
  reader.check_keys(root, "", schema::top_level_keys());
  Config config;
  if (const YAML::Node value = root["name"]; has(value)) {
    config.name = reader.text(value, "name");
    // The name becomes part of the run directory, runs/<name>-<timestamp>.
    if (config.name.empty() || config.name.find('/') != std::string::npos) {
      reader.fail("name", "name must be a non-empty word without '/' (got '" + config.name + "')", value);
    }
  }
  if (const YAML::Node value = root["seed"]; has(value)) config.seed = reader.unsigned_integer(value, "seed");
  if (const YAML::Node value = root["device"]; has(value))
    config.device = reader.word<Device>(value, "device");
  // At most 1024 (as import-images' --threads): OpenMP's runtime crashed starting 100,000.
  if (const YAML::Node value = root["threads"]; has(value))
    config.threads = static_cast<int>(reader.integer(value, "threads", 0, 1024));

  read_model(Section(reader, root, "model"), config.model);
  read_data(Section(reader, root, "data"), config.data);
  read_optimizer(Section(reader, root, "optimizer"), config.optimizer);
  read_schedule(Section(reader, root, "schedule"), config.schedule);
  read_train(Section(reader, root, "train"), config.train);
  read_checkpoint(Section(reader, root, "checkpoint"), config.checkpoint);
  read_distributed(Section(reader, root, "distributed"), config.distributed);
  read_elastic(Section(reader, root, "elastic"), config.elastic);
  read_trace(Section(reader, root, "trace"), config.trace);
  read_evaluation(Section(reader, root, "eval"), config.eval);
  if (config.train.early_stop)
    require_evaluated_metric(reader, root["train"]["early_stop"]["metric"], "train.early_stop.metric",
                             config.train.early_stop->metric, config.train.ema.has_value());
  if (!config.checkpoint.keep_best.empty())
    require_evaluated_metric(reader, root["checkpoint"]["keep_best"], "checkpoint.keep_best",
                             config.checkpoint.keep_best, config.train.ema.has_value());
  return config;
}

}  // namespace phalanx::config
