// Typed reads from a YAML tree (see reader.hpp). Scalars are parsed here with std::from_chars
// rather than yaml-cpp's conversions, which accept hex, octal and trailing junk inconsistently
// and give messages without the key.
#include "reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "schema.hpp"

namespace phalanx::config {
namespace {

bool contains(const std::vector<std::string>& words, const std::string& word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

// YAML allows an explicit '+'; from_chars does not.
std::string_view without_plus(const std::string& text) {
  std::string_view view(text);
  if (view.size() > 1 && view.front() == '+' && view[1] != '-') view.remove_prefix(1);
  return view;
}

std::string integer_kind(std::int64_t minimum) {
  if (minimum >= 1) return "a positive integer";
  if (minimum == 0) return "a non-negative integer";
  return "an integer";
}

std::string describe_range(std::optional<Bound> lower, std::optional<Bound> upper) {
  if (lower && upper) {
    return std::string("in ") + (lower->inclusive ? "[" : "(") + format_number(lower->value) + ", " +
           format_number(upper->value) + (upper->inclusive ? "]" : ")");
  }
  if (lower) return std::string(lower->inclusive ? ">= " : "> ") + format_number(lower->value);
  if (upper) return std::string(upper->inclusive ? "<= " : "< ") + format_number(upper->value);
  return "a number";
}

template <typename Real>
bool within(Real value, std::optional<Bound> lower, std::optional<Bound> upper) {
  const double wide = static_cast<double>(value);
  if (lower && (lower->inclusive ? wide < lower->value : wide <= lower->value)) return false;
  if (upper && (upper->inclusive ? wide > upper->value : wide >= upper->value)) return false;
  return true;
}

template <typename Real>
Real read_real(const Reader& reader, const YAML::Node& node, const std::string& key, const std::string& text,
               std::optional<Bound> lower, std::optional<Bound> upper) {
  const std::string_view digits = without_plus(text);
  Real value{};
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size() || !std::isfinite(value)) {
    reader.fail(key, key + ": expected a number, got " + describe(node), node);
  }
  if (!within(value, lower, upper)) {
    reader.fail(key, key + " must be " + describe_range(lower, upper) + " (got " + text + ")", node);
  }
  return value;
}

}  // namespace

Reader::Reader(std::string source_name, std::vector<std::string> overridden_keys)
    : source_name_(std::move(source_name)), overridden_keys_(std::move(overridden_keys)) {}

void Reader::fail(const std::string& key, const std::string& message, const YAML::Node& node) const {
  // A value from --set has no line in the file; saying where it came from saves a search.
  for (const std::string& overridden : overridden_keys_) {
    const bool under =
        key == overridden || key.starts_with(overridden + ".") || key.starts_with(overridden + "[");
    if (!key.empty() && under)
      throw_input_error(source_name_ + ": " + message + " (from --set " + overridden + ")");
  }
  if (node.IsDefined() && !node.Mark().is_null()) {
    throw_input_error(source_name_ + ": " + message + " (line " + std::to_string(node.Mark().line + 1) + ")");
  }
  throw_input_error(source_name_ + ": " + message);
}

bool Reader::require_mapping(const YAML::Node& node, const std::string& key) const {
  if (!node.IsDefined() || node.IsNull()) return false;
  if (!node.IsMap()) fail(key, key + ": expected a mapping of keys, got " + describe(node), node);
  return true;
}

void Reader::check_keys(const YAML::Node& mapping, const std::string& prefix,
                        const std::vector<std::string>& allowed) const {
  std::vector<std::string> seen;
  for (auto entry = mapping.begin(); entry != mapping.end(); ++entry) {
    const YAML::Node key_node = entry->first;  // a copy: the iterator hands out a temporary
    if (!key_node.IsScalar()) {
      const std::string where = prefix.empty() ? "the top level" : prefix;
      fail(prefix, where + ": keys must be plain words, got " + describe(key_node), key_node);
    }
    const std::string& key = key_node.Scalar();
    const std::string dotted = prefix.empty() ? key : prefix + "." + key;
    if (!contains(allowed, key)) {
      std::string hint;
      if (const std::string near = closest_match(key, allowed); !near.empty()) {
        hint = " (did you mean '" + (prefix.empty() ? near : prefix + "." + near) + "'?)";
      } else if (prefix.find('[') == std::string::npos) {
        // A key written in the wrong section ("train.learning_rate") is found by its last word.
        std::vector<std::string> leaves;
        for (const std::string& candidate : schema::dotted_keys()) {
          leaves.push_back(candidate.substr(candidate.rfind('.') + 1));
        }
        if (const std::string near = closest_match(key, leaves); !near.empty()) {
          for (const std::string& candidate : schema::dotted_keys()) {
            if (candidate.substr(candidate.rfind('.') + 1) == near) {
              hint = " (did you mean '" + candidate + "'?)";
              break;
            }
          }
        }
      }
      if (hint.empty()) hint = " (allowed: " + join(allowed, ", ") + ")";
      fail(dotted, "unknown key '" + dotted + "'" + hint, key_node);
    }
    if (contains(seen, key)) {
      // Only the file holds a key twice (--set replaces a value): its line, never "from --set".
      const YAML::Mark mark = key_node.Mark();
      throw_input_error(source_name_ + ": duplicate key '" + dotted + "'" +
                        (mark.is_null() ? std::string() : " (line " + std::to_string(mark.line + 1) + ")"));
    }
    seen.push_back(key);
  }
}

const std::string& Reader::scalar(const YAML::Node& node, const std::string& key,
                                  const std::string& expected) const {
  // IsDefined first: yaml-cpp throws its own exception when asked the type of a missing key.
  if (!node.IsDefined() || !node.IsScalar())
    fail(key, key + ": expected " + expected + ", got " + describe(node), node);
  return node.Scalar();
}

std::int64_t Reader::integer(const YAML::Node& node, const std::string& key, std::int64_t minimum,
                             std::int64_t maximum) const {
  const std::string kind = integer_kind(minimum);
  const std::string& text = scalar(node, key, kind);
  const std::string_view digits = without_plus(text);
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  const bool whole = end == digits.data() + digits.size();
  if (error == std::errc::invalid_argument || !whole)
    fail(key, key + ": expected " + kind + ", got " + describe(node), node);
  // Too many digits for 64 bits is a range error, not a type error: say which end it missed.
  const bool negative = !digits.empty() && digits.front() == '-';
  const bool below = error == std::errc::result_out_of_range ? negative : value < minimum;
  const bool above = error == std::errc::result_out_of_range ? !negative : value > maximum;
  const bool open_above =
      maximum == std::numeric_limits<std::int64_t>::max() || maximum == std::numeric_limits<int>::max();
  if (below || above) {
    std::string range;
    if (open_above) {
      range = below ? ">= " + std::to_string(minimum) : "<= " + std::to_string(maximum);
    } else {
      range = "in [" + std::to_string(minimum) + ", " + std::to_string(maximum) + "]";
    }
    fail(key, key + " must be " + range + " (got " + text + ")", node);
  }
  return value;
}

int Reader::int_value(const YAML::Node& node, const std::string& key, int minimum) const {
  return static_cast<int>(integer(node, key, minimum, std::numeric_limits<int>::max()));
}

std::uint64_t Reader::unsigned_integer(const YAML::Node& node, const std::string& key) const {
  const std::string& text = scalar(node, key, "a non-negative integer");
  const std::string_view digits = without_plus(text);
  if (!digits.empty() && digits.front() == '-') {
    std::int64_t negative = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), negative);
    if (end == digits.data() + digits.size() && error != std::errc::invalid_argument) {
      fail(key, key + " must be >= 0 (got " + text + ")", node);
    }
  }
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error == std::errc::invalid_argument || end != digits.data() + digits.size()) {
    fail(key, key + ": expected a non-negative integer, got " + describe(node), node);
  }
  if (error == std::errc::result_out_of_range) {
    fail(key,
         key + " must be <= " + std::to_string(std::numeric_limits<std::uint64_t>::max()) + " (got " + text +
             ")",
         node);
  }
  return value;
}

double Reader::real(const YAML::Node& node, const std::string& key, std::optional<Bound> lower,
                    std::optional<Bound> upper) const {
  return read_real<double>(*this, node, key, scalar(node, key, "a number"), lower, upper);
}

float Reader::real32(const YAML::Node& node, const std::string& key, std::optional<Bound> lower,
                     std::optional<Bound> upper) const {
  return read_real<float>(*this, node, key, scalar(node, key, "a number"), lower, upper);
}

bool Reader::boolean(const YAML::Node& node, const std::string& key) const {
  std::string text = scalar(node, key, "true or false");
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  if (text == "true" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "no" || text == "off") return false;
  fail(key, key + ": expected true or false, got " + describe(node), node);
}

std::string Reader::text(const YAML::Node& node, const std::string& key) const {
  return scalar(node, key, "a string");
}

std::string Reader::choice(const YAML::Node& node, const std::string& key,
                           const std::vector<std::string>& allowed) const {
  const std::string value = scalar(node, key, "one of " + join(allowed, ", "));
  if (contains(allowed, value)) return value;
  const std::string near = closest_match(value, allowed);
  const std::string hint =
      near.empty() ? "(allowed: " + join(allowed, ", ") + ")" : "(did you mean '" + near + "'?)";
  fail(key, key + ": unknown value '" + value + "' " + hint, node);
}

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined()) return "nothing";
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "an empty value";
  }
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string joined;
  for (const std::string& word : words) joined += (joined.empty() ? "" : separator) + word;
  return joined;
}

namespace {
// YAML 1.1 readers (PyYAML among them) take "1e-04" for a string: a float needs a dot, so the
// mantissa becomes "1.0" — still the shortest text that reads back exactly.
std::string with_decimal_point(std::string text) {
  const auto exponent = text.find('e');
  if (exponent != std::string::npos && text.find('.') == std::string::npos) text.insert(exponent, ".0");
  return text;
}
}  // namespace

std::string format_number(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return with_decimal_point(std::string(buffer, result.ptr));
}

std::string format_number(float value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return with_decimal_point(std::string(buffer, result.ptr));
}

}  // namespace phalanx::config
