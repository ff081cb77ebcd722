// Config words: a field that takes one of a few words (device: cpu | cuda | auto) is an enum,
// parsed once by the config reader (an unknown word gets a did-you-mean) and named back by the same
// table in messages, in to_yaml and in summaries. Each enum has a `words(Enum)` table beside it,
// found by argument-dependent lookup.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace phalanx::config {

template <typename Word>
struct WordName {
  Word word;
  std::string_view name;
};

template <typename Word>
concept ConfigWord = requires(Word word) { words(word); };

// The word's name as the config writes it.
template <ConfigWord Word>
std::string name_of(Word word) {
  for (const auto& entry : words(Word{}))
    if (entry.word == word) return std::string(entry.name);
  return "?";
}

// Every name of `Word`, in the table's order (what a message lists as allowed).
template <ConfigWord Word>
std::vector<std::string> names_of() {
  std::vector<std::string> names;
  for (const auto& entry : words(Word{})) names.emplace_back(entry.name);
  return names;
}

// The word named `name`; none when no word has that name.
template <ConfigWord Word>
std::optional<Word> word_named(std::string_view name) {
  for (const auto& entry : words(Word{}))
    if (entry.name == name) return entry.word;
  return std::nullopt;
}

// A config word never goes into JSON (summaries, the sweep's stored definition) as its number:
// this stops the build where one would; such places write name_of(word).
template <typename Json, ConfigWord Word>
void to_json(Json& json, Word word) = delete;

// Messages built with << (PHALANX_REQUIRE_INPUT's parts) name the word.
template <ConfigWord Word>
std::ostream& operator<<(std::ostream& stream, Word word) {
  return stream << name_of(word);
}

}  // namespace phalanx::config
