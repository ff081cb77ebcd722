// Typed reads from a YAML tree with the error messages of docs/DESIGN.md §5: every message names the
// source file and the full dotted key, the allowed range or values, and says when a value came
// from `--set` rather than the file. The section and layer parsers are written against this.
#pragma once

#include "phalanx/config/words.hpp"
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace phalanx::config {

// One end of a real-valued range: `value` itself allowed or not.
struct Bound {
  double value;
  bool inclusive;
};

class Reader {
 public:
  // `overridden_keys` are the dotted keys set by `--set`; errors under them say so.
  Reader(std::string source_name, std::vector<std::string> overridden_keys);

  const std::string& source_name() const { return source_name_; }

  // Throws the InvalidInput error "<source>: <message>", followed by where the value came
  // from: "(from --set KEY)" or the line of `node` in the file.
  [[noreturn]] void fail(const std::string& key, const std::string& message, const YAML::Node& node) const;

  // A section written as `train:` with nothing under it reads as empty; anything else but a
  // mapping is an error. Returns false when the section is empty or absent.
  bool require_mapping(const YAML::Node& node, const std::string& key) const;
  // Rejects keys that are not plain words, duplicates and keys outside `allowed` (with a
  // suggestion). `prefix` is the dotted key of the mapping ("" for the top level).
  void check_keys(const YAML::Node& mapping, const std::string& prefix,
                  const std::vector<std::string>& allowed) const;

  std::int64_t integer(const YAML::Node& node, const std::string& key, std::int64_t minimum,
                       std::int64_t maximum = std::numeric_limits<std::int64_t>::max()) const;
  // An `int` field: the range is capped at what an int holds.
  int int_value(const YAML::Node& node, const std::string& key, int minimum) const;
  std::uint64_t unsigned_integer(const YAML::Node& node, const std::string& key) const;
  double real(const YAML::Node& node, const std::string& key, std::optional<Bound> lower,
              std::optional<Bound> upper) const;
  // Read straight as float (not via double) so that a float written by to_yaml reads back exactly.
  float real32(const YAML::Node& node, const std::string& key, std::optional<Bound> lower,
               std::optional<Bound> upper) const;
  bool boolean(const YAML::Node& node, const std::string& key) const;
  std::string text(const YAML::Node& node, const std::string& key) const;
  // A string that must be one of `allowed`; an unknown one gets a suggestion or the list.
  std::string choice(const YAML::Node& node, const std::string& key,
                     const std::vector<std::string>& allowed) const;
  // A config word (words.hpp): one of the enum's names, with choice's messages.
  template <ConfigWord Word>
  Word word(const YAML::Node& node, const std::string& key) const {
    return *word_named<Word>(choice(node, key, names_of<Word>()));
  }

 private:
  // The scalar text of `node`, or an error saying `expected` and what was found instead.
  const std::string& scalar(const YAML::Node& node, const std::string& key,
                            const std::string& expected) const;

  std::string source_name_;
  std::vector<std::string> overridden_keys_;
};

// How a value appears in messages: 'abc', an empty value, a list, a mapping.
std::string describe(const YAML::Node& node);
std::string join(const std::vector<std::string>& words, const std::string& separator);
// Shortest text that reads back to exactly `value` (also what to_yaml writes).
std::string format_number(double value);
std::string format_number(float value);

}  // namespace phalanx::config
