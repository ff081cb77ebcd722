// Reading YAML text as exactly one document: configuration files, sweep files and --set values.
// yaml-cpp's YAML::Load reads the first document of a text and drops the rest without a word.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>

namespace phalanx::config {

// YAML is UTF-8 text: InvalidInput naming `where`, its line and byte, when `text` is not.
void require_utf8(const std::string& text, const std::string& where);

// The number of YAML documents in `text`, built from parser events without building nodes.
// InvalidInput for the token yaml-cpp 0.7 would loop on for ever; YAML::Exception for other
// syntax errors.
std::size_t count_documents(const std::string& text, const std::string& source_name);

// The one document of a configuration file, as a mapping: UTF-8, one document, not empty
// (`empty` says what it needs). InvalidInput naming `source_name` otherwise.
YAML::Node load_one_mapping(const std::string& yaml_text, const std::string& source_name,
                            const std::string& empty);

// The value of a --set KEY=VALUE as one YAML document (`where` names the assignment). An empty
// value is YAML's null, as before.
YAML::Node load_one_value(const std::string& text, const std::string& where);

}  // namespace phalanx::config
