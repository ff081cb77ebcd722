// Entry points config::parse and config::load: read the YAML text, turn syntax errors and
// unreadable files into InvalidInput errors naming the file, apply --set, then convert.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "conversion.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/utf8.hpp"
#include "reader.hpp"
#include "yaml_document.hpp"

namespace phalanx::config {

Config parse(const std::string& yaml_text, const std::string& source_name,
             const std::vector<std::string>& overrides) {
  for (const auto& assignment : overrides) require_utf8(assignment, source_name + ": --set");
  YAML::Node root = load_one_mapping(yaml_text, source_name, "it needs at least 'model' and 'data.path'");
  try {
    const std::vector<std::string> overridden = apply_overrides(root, source_name, overrides);
    return convert_config(Reader(source_name, overridden), root);
  } catch (const YAML::Exception& error) {
    // The readers check node types before using them; this only keeps a yaml-cpp surprise an
    // input error that names the file instead of an unexplained crash.
    throw_input_error(source_name + ": cannot read the configuration: " + error.msg);
  }
}

namespace {
std::string read_config_text(const std::string& path) {
  std::error_code status_error;
  const std::filesystem::file_status status = std::filesystem::status(path, status_error);
  if (!std::filesystem::exists(status))
    throw_input_error(path + ": cannot read the config file: no such file");
  if (std::filesystem::is_directory(status)) {
    throw_input_error(path + ": cannot read the config file: it is a directory");
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw_input_error(path + ": cannot read the config file: " + std::strerror(errno));
  std::ostringstream text;
  text << stream.rdbuf();
  if (stream.bad()) throw_input_error(path + ": cannot read the config file: " + std::strerror(errno));
  return text.str();
}
}  // namespace

Config load(const std::string& path, const std::vector<std::string>& overrides) {
  return parse(read_config_text(path), path, overrides);
}

SourceConfig load_data_source(const std::string& path) {
  const YAML::Node root = load_one_mapping(read_config_text(path), path, "it needs a data.source block");
  try {
    return convert_data_source(Reader(path, {}), root);
  } catch (const YAML::Exception& error) {
    throw_input_error(path + ": cannot read data.source: " + error.msg);
  }
}

}  // namespace phalanx::config
