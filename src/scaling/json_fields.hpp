// Reading the JSON files the scaling model takes (fabric, profile, layer table): every refusal names
// the file and the field, so a user knows which figure to add or fix.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "phalanx/core/error.hpp"

namespace phalanx::scaling {

inline nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  // A directory reads as an empty text and a FIFO blocks the read until a writer comes: only a
  // regular file (or a link to one) is read.
  std::error_code error_code;
  const auto status = std::filesystem::status(path, error_code);
  PHALANX_REQUIRE_INPUT(std::filesystem::exists(status), what, " ", path,
                        ": cannot open the file (no such file)");
  PHALANX_REQUIRE_INPUT(std::filesystem::is_regular_file(status), what, " ", path,
                        ": not a regular file (a directory, a pipe or a device)");
  std::ifstream file(path);
  PHALANX_REQUIRE_INPUT(file.good(), what, " ", path, ": cannot open the file");
  std::stringstream text;
  text << file.rdbuf();
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& error) {
    // parse_error for broken syntax; out_of_range for a number no double holds (1e400).
    PHALANX_REQUIRE_INPUT(false, what, " ", path, ": not valid JSON (", error.what(), ")");
  }
  PHALANX_REQUIRE_INPUT(json.is_object(), what, " ", path, ": not a JSON object");
  return json;
}

// The values a figure may take: from `least` (0 admits zero) to `most`. Beyond "finite and
// positive", the bounds refuse what no machine measures (1e-320 GB/s, a step of 1e300 s), which
// would otherwise come out of a prediction as nan, inf or a time of 1e300 ms.
struct Bounds {
  double least, most;
};
// Seconds a profile holds: the stages of a measured all-reduce can differ by less than a clock
// tick (0 or a rounding's 1e-20), so those admit anything from 0; a time that divides (a rank's
// step) is at least a nanosecond, the clock's resolution. Neither is over a million seconds.
inline constexpr Bounds seconds_from_zero{0, 1e6};
inline constexpr Bounds positive_seconds{1e-9, 1e6};

// A number at `field` of `object` (`where` spells the field's path in messages); absent: nullopt.
// One outside `bounds` is refused naming the file and the field.
inline std::optional<double> optional_number(const nlohmann::json& object, const char* field,
                                             const std::string& path, const std::string& where,
                                             Bounds bounds) {
  const auto found = object.find(field);
  if (found == object.end() || found->is_null()) return std::nullopt;
  PHALANX_REQUIRE_INPUT(found->is_number(), path, ": field '", where, field, "' must be a number");
  const double value = found->get<double>();
  PHALANX_REQUIRE_INPUT(std::isfinite(value) && value >= bounds.least && value <= bounds.most, path,
                        ": field '", where, field, "' must be a number from ", bounds.least, " to ",
                        bounds.most, " (got ", found->dump(), ")");
  return value;
}

inline double required_number(const nlohmann::json& object, const char* field, const std::string& path,
                              const std::string& where, Bounds bounds) {
  const std::optional<double> value = optional_number(object, field, path, where, bounds);
  PHALANX_REQUIRE_INPUT(value.has_value(), path, ": field '", where, field, "' is missing (a number)");
  return *value;
}

// A whole number from `least` to `most` at `field` of `object` (a count: layers' parameters, ranks,
// images). 2.5 is refused, not truncated; 1e6 (a whole number written as a float) is taken.
inline std::int64_t required_count(const nlohmann::json& object, const char* field, const std::string& path,
                                   const std::string& where, std::int64_t least, std::int64_t most) {
  const auto found = object.find(field);
  PHALANX_REQUIRE_INPUT(found != object.end() && !found->is_null(), path, ": field '", where, field,
                        "' is missing (a whole number)");
  PHALANX_REQUIRE_INPUT(found->is_number(), path, ": field '", where, field, "' must be a whole number");
  // Bounds well inside 2^53 make the double comparison exact for every whole number that passes.
  const double value = found->get<double>();
  const bool whole = std::isfinite(value) && std::floor(value) == value;
  PHALANX_REQUIRE_INPUT(whole && value >= static_cast<double>(least) && value <= static_cast<double>(most),
                        path, ": field '", where, field, "' must be a whole number from ", least, " to ",
                        most, " (got ", found->dump(), ")");
  return found->is_number_integer() ? found->get<std::int64_t>() : static_cast<std::int64_t>(value);
}

inline std::string optional_text(const nlohmann::json& object, const char* field, const std::string& path,
                                 const std::string& where) {
  const auto found = object.find(field);
  if (found == object.end() || found->is_null()) return "";
  PHALANX_REQUIRE_INPUT(found->is_string(), path, ": field '", where, field, "' must be a string");
  return found->get<std::string>();
}

// A non-empty list of seconds at `field` of `object`, each within `bounds`. A missing field, an
// empty list or a bad entry is refused naming the entry.
inline std::vector<double> required_seconds_list(const nlohmann::json& object, const char* field,
                                                 const std::string& path, const std::string& where,
                                                 Bounds bounds) {
  const auto found = object.find(field);
  PHALANX_REQUIRE_INPUT(found != object.end() && found->is_array() && !found->empty(), path, ": field '",
                        where, field, "' is missing or not a non-empty list of seconds");
  std::vector<double> values;
  for (std::size_t index = 0; index < found->size(); ++index) {
    const nlohmann::json& value = (*found)[index];
    const bool valid = value.is_number() && std::isfinite(value.get<double>()) &&
                       value.get<double>() >= bounds.least && value.get<double>() <= bounds.most;
    PHALANX_REQUIRE_INPUT(valid, path, ": field '", where, field, "[", index, "]' holds ", value.dump(),
                          " (seconds from ", bounds.least, " to ", bounds.most, " expected)");
    values.push_back(value.get<double>());
  }
  return values;
}

}  // namespace phalanx::scaling
