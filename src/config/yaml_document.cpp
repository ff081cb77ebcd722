// Reading YAML text as exactly one document (see yaml_document.hpp).
#include "yaml_document.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/mark.h>

#include <algorithm>
#include <sstream>

#include "phalanx/core/error.hpp"
#include "phalanx/core/utf8.hpp"
#include "reader.hpp"

namespace phalanx::config {

// YAML is UTF-8 text; yaml-cpp passes other bytes through into strings, and the config.yaml
// written from them would not read back as the same config.
void require_utf8(const std::string& text, const std::string& where) {
  const std::size_t offset = first_invalid_utf8(text);
  if (offset == std::string::npos) return;
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
  throw_input_error(where + ": line " + std::to_string(line) + ": not UTF-8 text (byte " +
                    std::to_string(offset) + "); YAML files are UTF-8");
}

// Counts the YAML documents of `text` with yaml-cpp's event parser, building no nodes. yaml-cpp
// 0.7's YAML::LoadAll never returns on text with a ',' (or another token no node can begin with)
// where a document's value should begin: its parser reports an empty document there without
// consuming the token, again and again, and LoadAll keeps every one until memory runs out. Here a
// document that begins where the one before it began is that loop, refused as the syntax error it
// is. YAML::Exception (a syntax error yaml-cpp reports itself) goes to the caller.
std::size_t count_documents(const std::string& text, const std::string& source_name) {
  // Only where each document begins: the nodes themselves are built by YAML::Load afterwards.
  class DocumentStart final : public YAML::EventHandler {
   public:
    YAML::Mark mark = YAML::Mark::null_mark();
    void OnDocumentStart(const YAML::Mark& start) override { mark = start; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  };
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentStart document;
  std::size_t documents = 0;
  int previous_start = -1;
  while (parser.HandleNextDocument(document)) {
    if (documents > 0 && document.mark.pos == previous_start) {
      const auto offset = static_cast<std::size_t>(document.mark.pos);
      const std::string token = offset < text.size() ? " '" + text.substr(offset, 1) + "'" : "";
      throw_input_error(source_name + ": line " + std::to_string(document.mark.line + 1) + ", column " +
                        std::to_string(document.mark.column + 1) + ": YAML syntax error: unexpected" + token +
                        " where a value should begin");
    }
    previous_start = document.mark.pos;
    ++documents;
  }
  return documents;
}

// The one YAML document of a configuration file, as a mapping: UTF-8, one document (a second
// would otherwise be dropped without a word), not empty (`empty` says what it needs).
YAML::Node load_one_mapping(const std::string& yaml_text, const std::string& source_name,
                            const std::string& empty) {
  require_utf8(yaml_text, source_name);
  std::size_t documents = 0;
  YAML::Node root;
  try {
    documents = count_documents(yaml_text, source_name);
    // The first document only: a second one is refused below.
    if (documents > 0) root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& error) {
    std::string where;
    if (!error.mark.is_null()) {
      where = "line " + std::to_string(error.mark.line + 1) + ", column " +
              std::to_string(error.mark.column + 1) + ": ";
    }
    throw_input_error(source_name + ": " + where + "YAML syntax error: " + error.msg);
  }
  if (documents > 1) {
    throw_input_error(source_name + ": holds " + std::to_string(documents) +
                      " YAML documents (separated by '---'); a configuration is one");
  }
  if (documents == 0 || root.IsNull())
    throw_input_error(source_name + ": the configuration is empty (" + empty + ")");
  if (!root.IsMap()) {
    throw_input_error(source_name + ": expected a mapping of keys at the top level, got " + describe(root));
  }
  return root;
}

YAML::Node load_one_value(const std::string& text, const std::string& where) {
  std::size_t documents = 0;
  try {
    documents = count_documents(text, where);
    if (documents > 1)
      throw_input_error(where + ": the value holds " + std::to_string(documents) +
                        " YAML documents (separated by '---'); a value is one");
    return YAML::Load(text);
  } catch (const YAML::Exception& error) {
    throw_input_error(where + ": cannot read the value as YAML: " + error.msg);
  }
}

}  // namespace phalanx::config
