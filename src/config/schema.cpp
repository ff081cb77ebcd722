// The key and value lists of the configuration (see schema.hpp). Kept as plain tables so that
// adding a key means adding one word here and one read in the section parser.
#include "schema.hpp"

#include <algorithm>
#include <map>

namespace phalanx::config::schema {
namespace {

const std::map<std::string, std::vector<std::string>>& sections() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"model", {"preset", "layers", "init_from"}},
      {"data",
       {"path", "source", "train_split", "test_split", "prefetch_batches", "augment", "eval_resize", "cache",
        "max_cache_gb", "stream_window_mb"}},
      {"data.source",
       {"train", "test", "val", "val_fraction", "test_fraction", "split_seed", "layout", "labels", "classes",
        "statistics"}},
      {"data.source.train", {"images", "labels"}},
      {"data.source.test", {"images", "labels"}},
      {"data.source.val", {"images", "labels"}},
      // A nested section is listed under its dotted name and appears as a key of its parent.
      {"data.augment",
       {"random_crop_padding", "horizontal_flip", "cutout", "random_erasing", "trivial_augment",
        "rand_augment", "random_resized_crop"}},
      {"data.augment.random_resized_crop", {"size", "scale", "ratio"}},
      {"data.augment.rand_augment", {"num_ops", "magnitude", "magnitude_bins"}},
      {"data.augment.random_erasing", {"probability", "scale", "ratio"}},
      {"optimizer",
       {"type", "learning_rate", "momentum", "nesterov", "weight_decay", "beta1", "beta2", "epsilon"}},
      {"schedule",
       {"type", "warmup_epochs", "warmup_start_factor", "step_epochs", "gamma", "minimum_factor",
        "one_cycle_peak_fraction", "one_cycle_div_factor", "one_cycle_final_div_factor"}},
      {"train",
       {"epochs", "max_steps", "batch_size", "accumulation_steps", "label_smoothing", "log_every_steps",
        "precision", "loss_scale", "loss_scale_initial", "activation_dtype", "deterministic", "nonfinite",
        "freeze", "clip_grad_norm", "ema", "early_stop", "mixup"}},
      {"train.ema", {"decay", "every_steps", "warmup"}},
      {"train.early_stop", {"metric", "patience", "min_delta"}},
      {"train.mixup", {"mixup_alpha", "cutmix_alpha", "probability", "switch_probability"}},
      {"checkpoint", {"every_steps", "keep", "keep_best"}},
      {"distributed", {"bucket_mb", "timeout_s", "grad_dtype", "batch_split", "local_batches"}},
      {"elastic", {"global_batch", "learning_rate_rule"}},
      {"trace", {"steps"}},
      {"eval", {"top_k"}},
  };
  return table;
}

const std::map<std::string, std::vector<std::string>>& layer_table() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"conv", {"type", "name", "out_channels", "kernel", "stride", "padding", "groups", "dilation", "bias"}},
      {"linear", {"type", "name", "out_features", "bias"}},
      {"relu", {"type", "name"}},
      {"max_pool", {"type", "name", "kernel", "stride", "padding"}},
      {"avg_pool", {"type", "name", "kernel", "stride", "padding"}},
      {"global_avg_pool", {"type", "name"}},
      {"batch_norm", {"type", "name"}},
      {"dropout", {"type", "name", "probability"}},
      {"flatten", {"type", "name"}},
      {"residual", {"type", "name", "main", "shortcut", "relu_after", "stochastic_depth"}},
      {"squeeze_excitation", {"type", "name", "squeeze_channels", "activation", "scale_activation"}},
      {"inverted_residual",
       {"type", "name", "out_channels", "expand_ratio", "kernel", "stride", "activation", "squeeze_excitation",
        "stochastic_depth"}},
      {"silu", {"type", "name"}},
      {"relu6", {"type", "name"}},
      {"hardswish", {"type", "name"}},
      {"hardsigmoid", {"type", "name"}},
      {"sigmoid", {"type", "name"}},
      {"gelu", {"type", "name", "approximate"}},
  };
  return table;
}

}  // namespace

const std::vector<std::string>& top_level_keys() {
  static const std::vector<std::string> keys = {
      "name",     "seed",  "device",     "threads",     "model",   "data",  "optimizer",
      "schedule", "train", "checkpoint", "distributed", "elastic", "trace", "eval"};
  return keys;
}

bool is_section(const std::string& key) {
  return sections().count(key) != 0;
}

const std::vector<std::string>& section_keys(const std::string& section) {
  return sections().at(section);
}

const std::vector<std::string>& dotted_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> result;
    // Depth first, so nested sections (data.augment) contribute their leaves, not themselves.
    const auto add = [&result](const auto& self, const std::string& key) -> void {
      if (!is_section(key)) {
        result.push_back(key);
        return;
      }
      for (const std::string& inner : section_keys(key)) self(self, key + "." + inner);
    };
    for (const std::string& key : top_level_keys()) add(add, key);
    return result;
  }();
  return keys;
}

const std::vector<std::string>& layer_types() {
  static const std::vector<std::string> types = {
      "conv",    "linear",   "relu", "max_pool", "avg_pool",  "global_avg_pool", "batch_norm", "dropout",
      "flatten", "residual", "silu", "relu6",    "hardswish", "hardsigmoid",     "sigmoid",    "gelu",
      "squeeze_excitation", "inverted_residual"};
  return types;
}

const std::vector<std::string>& activation_types() {
  static const std::vector<std::string> types = {"relu",        "relu6", "sigmoid", "hardsigmoid",
                                                 "silu",        "hardswish", "gelu"};
  return types;
}

const std::vector<std::string>& layer_keys(const std::string& type) {
  return layer_table().at(type);
}

const std::vector<std::string>& all_layer_keys() {
  static const std::vector<std::string> keys = {
      "type",         "name",       "out_channels",     "kernel",           "stride",
      "padding",      "groups",     "dilation",         "bias",             "out_features",
      "probability",  "main",       "shortcut",         "relu_after",       "approximate",
      "stochastic_depth", "squeeze_channels", "activation", "scale_activation", "expand_ratio",
      "squeeze_excitation"};
  return keys;
}

bool is_pool(const std::string& type) {
  return type == "max_pool" || type == "avg_pool";
}

const std::vector<std::string>& model_presets() {
  static const std::vector<std::string> presets = {
      "fmnist_cnn",      "lenet5",       "resnet20",           "resnet18",
      "resnet50",        "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
      "resnext50_32x4d"};
  return presets;
}

}  // namespace phalanx::config::schema
