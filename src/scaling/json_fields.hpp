// Reading the JSON files the scaling model takes (fabric, profile, layer table): every refusal names
// the file and the field, so a user knows which figure to add or fix.
#pragma once

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "phalanx/core/error.hpp"

namespace phalanx::scaling {

inline nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  std::ifstream file(path);
  PHALANX_REQUIRE_INPUT(file.good(), what, " ", path, ": cannot open the file");
  std::stringstream text;
  text << file.rdbuf();
  try {
    nlohmann::json json = nlohmann::json::parse(text.str());
    PHALANX_REQUIRE_INPUT(json.is_object(), what, " ", path, ": not a JSON object");
    return json;
  } catch (const nlohmann::json::parse_error& error) {
    PHALANX_REQUIRE_INPUT(false, what, " ", path, ": not valid JSON (", error.what(), ")");
  }
  return {};
}

// A number at `field` of `object` (`where` spells the field's path in messages); absent: nullopt.
// Negative, or zero where `positive` is asked, is refused.
inline std::optional<double> optional_number(const nlohmann::json& object, const char* field,
                                             const std::string& path, const std::string& where,
                                             bool positive = true) {
  const auto found = object.find(field);
  if (found == object.end() || found->is_null()) return std::nullopt;
  PHALANX_REQUIRE_INPUT(found->is_number(), path, ": field '", where, field, "' must be a number");
  const double value = found->get<double>();
  PHALANX_REQUIRE_INPUT(std::isfinite(value) && (positive ? value > 0 : value >= 0), path, ": field '", where,
                        field, "' must be ", positive ? "> 0" : ">= 0", " (got ", value, ")");
  return value;
}

inline double required_number(const nlohmann::json& object, const char* field, const std::string& path,
                              const std::string& where, bool positive = true) {
  const std::optional<double> value = optional_number(object, field, path, where, positive);
  PHALANX_REQUIRE_INPUT(value.has_value(), path, ": field '", where, field, "' is missing (a number)");
  return *value;
}

inline std::string optional_text(const nlohmann::json& object, const char* field, const std::string& path,
                                 const std::string& where) {
  const auto found = object.find(field);
  if (found == object.end() || found->is_null()) return "";
  PHALANX_REQUIRE_INPUT(found->is_string(), path, ": field '", where, field, "' must be a string");
  return found->get<std::string>();
}

// A non-empty list of seconds at `field` of `object`; each entry > 0, or >= 0 where `positive` is
// false. A missing field, an empty list or a bad entry is refused naming the entry.
inline std::vector<double> required_seconds_list(const nlohmann::json& object, const char* field,
                                                 const std::string& path, const std::string& where,
                                                 bool positive = true) {
  const auto found = object.find(field);
  PHALANX_REQUIRE_INPUT(found != object.end() && found->is_array() && !found->empty(), path, ": field '",
                        where, field, "' is missing or not a non-empty list of seconds");
  std::vector<double> values;
  for (std::size_t index = 0; index < found->size(); ++index) {
    const nlohmann::json& value = (*found)[index];
    const bool valid = value.is_number() && std::isfinite(value.get<double>()) &&
                       (positive ? value.get<double>() > 0 : value.get<double>() >= 0);
    PHALANX_REQUIRE_INPUT(valid, path, ": field '", where, field, "[", index, "]' holds ", value.dump(),
                          " (seconds ", positive ? "> 0" : ">= 0", " expected)");
    values.push_back(value.get<double>());
  }
  return values;
}

}  // namespace phalanx::scaling
