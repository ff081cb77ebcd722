// `--set dotted.key=value` overrides, written into the YAML tree before conversion so that a
// value from the command line goes through exactly the same checks as one from the file.
#include <algorithm>

#include "conversion.hpp"
#include "phalanx/core/error.hpp"
#include "schema.hpp"
#include "yaml_document.hpp"

namespace phalanx::config {
namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// The key must name one value: a known dotted key, not a section or a part of a layer list.
void check_override_key(const std::string& key, const std::string& where) {
  const std::vector<std::string>& keys = schema::dotted_keys();
  if (std::find(keys.begin(), keys.end(), key) != keys.end()) return;
  if (schema::is_section(key)) {
    throw_input_error(where + ": '" + key + "' is a section; set its keys one at a time (e.g. " + key + "." +
                      schema::section_keys(key).front() + "=...)");
  }
  if (key.starts_with("model.layers.") || key.starts_with("model.layers[")) {
    throw_input_error(where +
                      ": --set replaces 'model.layers' only as a whole (e.g. model.layers=\"[{type: "
                      "flatten}, {type: linear, out_features: 10}]\")");
  }
  const std::string near = closest_match(key, keys);
  throw_input_error(where + ": unknown key '" + key + "'" +
                    (near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

}  // namespace

std::vector<std::string> apply_overrides(YAML::Node& root, const std::string& source_name,
                                         const std::vector<std::string>& overrides) {
  std::vector<std::string> overridden_keys;
  for (const std::string& assignment : overrides) {
    const std::string where = source_name + ": --set '" + assignment + "'";
    const auto equals = assignment.find('=');
    if (equals == std::string::npos) throw_input_error(where + ": expected KEY=VALUE (e.g. train.epochs=3)");
    const std::string key = trim(assignment.substr(0, equals));
    if (key.empty()) throw_input_error(where + ": the key before '=' is empty");
    check_override_key(key, where);

    const YAML::Node value = load_one_value(assignment.substr(equals + 1), where);

    // Walk the dotted path (data.augment.cutout), creating absent or null sections on the way.
    YAML::Node mapping = root;
    std::string rest = key;
    for (auto dot = rest.find('.'); dot != std::string::npos && mapping.IsMap(); dot = rest.find('.')) {
      const std::string section = rest.substr(0, dot);
      if (!mapping[section].IsDefined() || mapping[section].IsNull())
        mapping[section] = YAML::Node(YAML::NodeType::Map);
      // YAML::Node assignment would overwrite the referenced node, so rebind with reset.
      mapping.reset(mapping[section]);
      rest = rest.substr(dot + 1);
    }
    // A section that is not a mapping in the file is left for conversion to report.
    if (mapping.IsMap() && rest.find('.') == std::string::npos) mapping[rest] = value;
    if (std::find(overridden_keys.begin(), overridden_keys.end(), key) == overridden_keys.end()) {
      overridden_keys.push_back(key);
    }
  }
  return overridden_keys;
}

}  // namespace phalanx::config
