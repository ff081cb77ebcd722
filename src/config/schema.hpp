// The vocabulary of the configuration: which keys each section takes, which layer types exist
// and which keys each takes, and the allowed enumerated values. Parsing, `--set` and the
// "did you mean" suggestions all read these lists, so a key is declared in exactly one place.
#pragma once

#include <string>
#include <vector>

namespace phalanx::config::schema {

// Keys of the top level, in the order to_yaml writes them.
const std::vector<std::string>& top_level_keys();
// True for keys whose value is a mapping: top-level sections (model, data, optimizer, ...) and
// nested ones by their dotted name (data.augment).
bool is_section(const std::string& key);
// Keys of one section, e.g. section_keys("train") = {epochs, max_steps, ...}; a nested
// section such as "data.augment" is one of its parent's keys.
const std::vector<std::string>& section_keys(const std::string& section);
// Every key a user can write outside the layer lists, as full dotted paths ("train.epochs").
const std::vector<std::string>& dotted_keys();

const std::vector<std::string>& layer_types();
// The layer types without parameters that squeeze_excitation and inverted_residual take as their
// `activation` / `scale_activation` (each of them a layer type too).
const std::vector<std::string>& activation_types();
// Keys that apply to a layer of `type` (which must be one of layer_types()).
const std::vector<std::string>& layer_keys(const std::string& type);
// Every field of LayerSpec, whatever the type.
const std::vector<std::string>& all_layer_keys();
// Pools read an absent stride as 0, which means "equal to the kernel" (as in PyTorch).
bool is_pool(const std::string& type);

const std::vector<std::string>& model_presets();

}  // namespace phalanx::config::schema
