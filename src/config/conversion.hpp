// The steps of config::parse that live in their own files: applying `--set` overrides to the
// YAML tree, and converting the tree into the typed structs (sections and layer lists).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "phalanx/config/config.hpp"
#include "reader.hpp"

namespace phalanx::config {

// Writes each "dotted.key=value" into `root` (a mapping) and returns the keys it set, so
// that later errors about those values can say they came from --set.
std::vector<std::string> apply_overrides(YAML::Node& root, const std::string& source_name,
                                         const std::vector<std::string>& overrides);

// The whole tree (a mapping) into a validated Config.
Config convert_config(const Reader& reader, const YAML::Node& root);

// Only data.source of a tree (the other sections may be absent), validated as in a config.
SourceConfig convert_data_source(const Reader& reader, const YAML::Node& root);

// A list of layers under dotted key `key` ("model.layers", "model.layers[3].main").
std::vector<LayerSpec> read_layer_list(const Reader& reader, const YAML::Node& list, const std::string& key);

}  // namespace phalanx::config
