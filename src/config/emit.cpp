// config::to_yaml: the resolved configuration with every key written, in the order of the
// schema. Numbers are written in their shortest exact form so that parse(to_yaml(c)) == c,
// which is what lets a checkpoint carry its config and a resume reproduce the run.
#include <algorithm>
#include <utility>

#include "phalanx/config/config.hpp"
#include "reader.hpp"
#include "schema.hpp"

namespace phalanx::config {
namespace {

void emit_text(YAML::Emitter& out, const std::string& key, const std::string& value) {
  // Always quoted: a name such as "null", "true" or "" must read back as that string.
  out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
}

template <ConfigWord Word>
void emit_text(YAML::Emitter& out, const std::string& key, Word word) {
  emit_text(out, key, name_of(word));
}

void emit_number(YAML::Emitter& out, const std::string& key, double value) {
  out << YAML::Key << key << YAML::Value << format_number(value);
}

void emit_layers(YAML::Emitter& out, const std::vector<LayerSpec>& layers);

void emit_layer_field(YAML::Emitter& out, const LayerSpec& layer, const std::string& key) {
  out << YAML::Key << key << YAML::Value;
  if (key == "type") out << YAML::DoubleQuoted << layer.type;
  if (key == "name") out << YAML::DoubleQuoted << layer.name;
  if (key == "out_channels") out << layer.out_channels;
  if (key == "kernel") out << layer.kernel;
  if (key == "stride") out << layer.stride;
  if (key == "padding") out << layer.padding;
  if (key == "groups") out << layer.groups;
  if (key == "dilation") out << layer.dilation;
  if (key == "bias") out << layer.bias;
  if (key == "out_features") out << layer.out_features;
  if (key == "probability") out << format_number(layer.probability);
  if (key == "main") emit_layers(out, layer.main);
  if (key == "shortcut") emit_layers(out, layer.shortcut);
  if (key == "relu_after") out << layer.relu_after;
  if (key == "stochastic_depth") out << format_number(layer.stochastic_depth);
  if (key == "squeeze_channels") out << layer.squeeze_channels;
  if (key == "activation") out << YAML::DoubleQuoted << layer.activation;
  if (key == "scale_activation") out << YAML::DoubleQuoted << layer.scale_activation;
  if (key == "expand_ratio") out << format_number(layer.expand_ratio);
  if (key == "squeeze_excitation") out << format_number(layer.squeeze_excitation);
  if (key == "approximate") out << YAML::DoubleQuoted << layer.approximate;
}

void emit_layers(YAML::Emitter& out, const std::vector<LayerSpec>& layers) {
  out << YAML::BeginSeq;
  for (const LayerSpec& layer : layers) {
    // Only the keys of the layer's type: those are the ones parse accepts for it.
    const std::vector<std::string>& types = schema::layer_types();
    const bool known = std::find(types.begin(), types.end(), layer.type) != types.end();
    out << YAML::BeginMap;
    for (const std::string& key : known ? schema::layer_keys(layer.type) : schema::all_layer_keys()) {
      // A residual block without stochastic depth is written as it was before the key existed, so
      // the resolved config (and its hash) of such a model stays the same.
      if (key == "stochastic_depth" && layer.type == "residual" && layer.stochastic_depth == 0.0f) continue;
      emit_layer_field(out, layer, key);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void emit_source(YAML::Emitter& out, const SourceConfig& source) {
  out << YAML::Key << "source" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, split] : {std::pair<const char*, const SourceSplitConfig*>{"train", &source.train},
                                    std::pair<const char*, const SourceSplitConfig*>{"test", &source.test},
                                    std::pair<const char*, const SourceSplitConfig*>{"val", &source.val}}) {
    if (split->empty()) continue;
    out << YAML::Key << name << YAML::Value << YAML::BeginMap;
    emit_text(out, "images", split->images.text());
    emit_text(out, "labels", split->labels.text());
    out << YAML::EndMap;
  }
  emit_number(out, "val_fraction", source.val_fraction);
  emit_number(out, "test_fraction", source.test_fraction);
  out << YAML::Key << "split_seed" << YAML::Value << source.split_seed;
  emit_text(out, "layout", source.layout);
  emit_text(out, "labels", source.labels);
  if (!source.classes_dataset.empty()) {
    emit_text(out, "classes", source.classes_dataset.text());
  } else if (!source.classes.empty()) {
    out << YAML::Key << "classes" << YAML::Value << YAML::BeginSeq;
    for (const std::string& name : source.classes) out << YAML::DoubleQuoted << name;
    out << YAML::EndSeq;
  }
  emit_text(out, "statistics", source.statistics);
  out << YAML::EndMap;
}

}  // namespace

std::string to_yaml(const Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  emit_text(out, "name", config.name);
  out << YAML::Key << "seed" << YAML::Value << config.seed;
  emit_text(out, "device", config.device);
  out << YAML::Key << "threads" << YAML::Value << config.threads;

  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  emit_text(out, "preset", config.model.preset);
  out << YAML::Key << "layers" << YAML::Value;
  emit_layers(out, config.model.layers);
  emit_text(out, "init_from", config.model.init_from);
  out << YAML::EndMap;

  const DataConfig& data = config.data;
  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  emit_text(out, "path", data.path);
  // Written only when used: a config of a native file keeps the shape it always had.
  if (data.source.enabled()) emit_source(out, data.source);
  emit_text(out, "train_split", data.train_split);
  emit_text(out, "test_split", data.test_split);
  out << YAML::Key << "prefetch_batches" << YAML::Value << data.prefetch_batches;
  out << YAML::Key << "augment" << YAML::Value << YAML::BeginMap;
  // Written only when on: a config without it keeps the text (and hash) it always had.
  if (const auto& crop = data.augment.random_resized_crop) {
    out << YAML::Key << "random_resized_crop" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "size" << YAML::Value << crop->size;
    for (const auto& [key, range] : {std::pair{"scale", crop->scale}, std::pair{"ratio", crop->ratio}}) {
      out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq << format_number(range[0])
          << format_number(range[1]) << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  out << YAML::Key << "random_crop_padding" << YAML::Value << data.augment.random_crop_padding;
  out << YAML::Key << "horizontal_flip" << YAML::Value << data.augment.horizontal_flip;
  out << YAML::Key << "cutout" << YAML::Value << data.augment.cutout;
  const RandomErasingConfig& erasing = data.augment.random_erasing;
  out << YAML::Key << "random_erasing" << YAML::Value << YAML::BeginMap;
  emit_number(out, "probability", erasing.probability);
  for (const auto& [key, range] : {std::pair{"scale", erasing.scale}, std::pair{"ratio", erasing.ratio}}) {
    out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq << format_number(range[0])
        << format_number(range[1]) << YAML::EndSeq;
  }
  out << YAML::EndMap;
  out << YAML::Key << "trivial_augment" << YAML::Value << data.augment.trivial_augment;
  const RandAugmentConfig& rand_augment = data.augment.rand_augment;
  out << YAML::Key << "rand_augment" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "num_ops" << YAML::Value << rand_augment.num_ops;
  out << YAML::Key << "magnitude" << YAML::Value << rand_augment.magnitude;
  out << YAML::Key << "magnitude_bins" << YAML::Value << rand_augment.magnitude_bins;
  out << YAML::EndMap;
  out << YAML::EndMap;
  if (data.eval_resize > 0) out << YAML::Key << "eval_resize" << YAML::Value << data.eval_resize;
  emit_text(out, "cache", data.cache);
  emit_number(out, "max_cache_gb", data.max_cache_gb);
  out << YAML::Key << "stream_window_mb" << YAML::Value << data.stream_window_mb;
  out << YAML::EndMap;

  const OptimizerConfig& optimizer = config.optimizer;
  out << YAML::Key << "optimizer" << YAML::Value << YAML::BeginMap;
  emit_text(out, "type", optimizer.type);
  emit_number(out, "learning_rate", optimizer.learning_rate);
  emit_number(out, "momentum", optimizer.momentum);
  out << YAML::Key << "nesterov" << YAML::Value << optimizer.nesterov;
  emit_number(out, "weight_decay", optimizer.weight_decay);
  emit_number(out, "beta1", optimizer.beta1);
  emit_number(out, "beta2", optimizer.beta2);
  emit_number(out, "epsilon", optimizer.epsilon);
  out << YAML::EndMap;

  const ScheduleConfig& schedule = config.schedule;
  out << YAML::Key << "schedule" << YAML::Value << YAML::BeginMap;
  emit_text(out, "type", schedule.type);
  emit_number(out, "warmup_epochs", schedule.warmup_epochs);
  emit_number(out, "warmup_start_factor", schedule.warmup_start_factor);
  emit_number(out, "step_epochs", schedule.step_epochs);
  emit_number(out, "gamma", schedule.gamma);
  emit_number(out, "minimum_factor", schedule.minimum_factor);
  emit_number(out, "one_cycle_peak_fraction", schedule.one_cycle_peak_fraction);
  emit_number(out, "one_cycle_div_factor", schedule.one_cycle_div_factor);
  emit_number(out, "one_cycle_final_div_factor", schedule.one_cycle_final_div_factor);
  out << YAML::EndMap;

  const TrainConfig& train = config.train;
  out << YAML::Key << "train" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "epochs" << YAML::Value << train.epochs;
  out << YAML::Key << "max_steps" << YAML::Value;
  if (train.max_steps) {
    out << *train.max_steps;
  } else {
    out << YAML::Null;  // no limit
  }
  if (train.batch_size_auto) {
    out << YAML::Key << "batch_size" << YAML::Value << "auto";
  } else {
    out << YAML::Key << "batch_size" << YAML::Value << train.batch_size;
  }
  if (train.accumulation_steps == 0) {
    out << YAML::Key << "accumulation_steps" << YAML::Value << "auto";
  } else {
    out << YAML::Key << "accumulation_steps" << YAML::Value << train.accumulation_steps;
  }
  emit_number(out, "label_smoothing", train.label_smoothing);
  out << YAML::Key << "log_every_steps" << YAML::Value << train.log_every_steps;
  emit_text(out, "precision", train.precision);
  emit_text(out, "loss_scale", train.loss_scale);
  emit_number(out, "loss_scale_initial", train.loss_scale_initial);
  emit_text(out, "activation_dtype", train.activation_dtype);
  out << YAML::Key << "deterministic" << YAML::Value << train.deterministic;
  emit_text(out, "nonfinite", train.nonfinite);
  out << YAML::Key << "freeze" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& prefix : train.freeze) out << YAML::DoubleQuoted << prefix;
  out << YAML::EndSeq;
  out << YAML::Key << "clip_grad_norm" << YAML::Value;
  if (train.clip_grad_norm)
    out << format_number(*train.clip_grad_norm);
  else
    out << YAML::Null;
  // Written only when set, as the sections are read: a config without them keeps its shape.
  if (train.ema) {
    out << YAML::Key << "ema" << YAML::Value << YAML::BeginMap;
    emit_number(out, "decay", train.ema->decay);
    out << YAML::Key << "every_steps" << YAML::Value << train.ema->every_steps;
    out << YAML::Key << "warmup" << YAML::Value << train.ema->warmup;
    out << YAML::EndMap;
  }
  if (train.early_stop) {
    out << YAML::Key << "early_stop" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "metric" << YAML::Value << train.early_stop->metric;
    out << YAML::Key << "patience" << YAML::Value << train.early_stop->patience;
    emit_number(out, "min_delta", train.early_stop->min_delta);
    out << YAML::EndMap;
  }
  // Written only when set, so a config without mixing keeps the text (and the hash) it had; an
  // alpha that is off is written null, which reads back as off.
  if (train.mixup != MixupConfig{}) {
    out << YAML::Key << "mixup" << YAML::Value << YAML::BeginMap;
    for (const auto& [key, alpha] : {std::pair{"mixup_alpha", train.mixup.mixup_alpha},
                                     std::pair{"cutmix_alpha", train.mixup.cutmix_alpha}}) {
      out << YAML::Key << key << YAML::Value;
      if (alpha > 0)
        out << format_number(alpha);
      else
        out << YAML::Null;
    }
    emit_number(out, "probability", train.mixup.probability);
    emit_number(out, "switch_probability", train.mixup.switch_probability);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;

  out << YAML::Key << "checkpoint" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "every_steps" << YAML::Value << config.checkpoint.every_steps;
  out << YAML::Key << "keep" << YAML::Value << config.checkpoint.keep;
  if (!config.checkpoint.keep_best.empty())
    out << YAML::Key << "keep_best" << YAML::Value << config.checkpoint.keep_best;
  out << YAML::EndMap;

  out << YAML::Key << "distributed" << YAML::Value << YAML::BeginMap;
  emit_number(out, "bucket_mb", config.distributed.bucket_mb);
  emit_number(out, "timeout_s", config.distributed.timeout_s);
  emit_text(out, "grad_dtype", config.distributed.grad_dtype);
  emit_text(out, "batch_split", config.distributed.batch_split);
  out << YAML::Key << "local_batches" << YAML::Value << YAML::Flow << config.distributed.local_batches;
  out << YAML::EndMap;

  out << YAML::Key << "elastic" << YAML::Value << YAML::BeginMap;
  emit_text(out, "global_batch", config.elastic.global_batch);
  emit_text(out, "learning_rate_rule", config.elastic.learning_rate_rule);
  out << YAML::EndMap;

  out << YAML::Key << "trace" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "steps" << YAML::Value << config.trace.steps;
  out << YAML::EndMap;

  out << YAML::Key << "eval" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "top_k" << YAML::Value << YAML::Flow << config.eval.top_k;
  out << YAML::EndMap;

  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace phalanx::config
