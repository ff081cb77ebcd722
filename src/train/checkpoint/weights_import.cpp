// Import and export of PyTorch weights (weights_import.hpp): the model is built on the CPU
// backend, as a checkpoint written by any rank loads on every other.
#include "phalanx/train/weights_import.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/distinct_files.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/utf8.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/nn/model_plan.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/pretrained_weights.hpp"
#include "phalanx/train/safetensors.hpp"

namespace phalanx::train {
namespace {

// Written as data.path when the import names no dataset: `phalanx eval` then asks for --data.
constexpr const char* no_dataset = "none (imported weights: give phalanx eval --data)";

// The class count the file's classifier head was trained for: the first dimension of the weight
// of the preset's head, found in a plan built for two classes.
int classes_of_file(const config::ModelConfig& model, const Shape& input, const StoredWeights& weights) {
  const nn::ModelPlan plan(model, input, 2);
  const std::vector<std::string> head = classifier_head(plan.registry(), 2);
  PHALANX_REQUIRE_INPUT(!head.empty(), "preset ", model.preset,
                        " has no classifier head to read the class count from: give --classes");
  const auto found = weights.tensors.find(head.front());
  PHALANX_REQUIRE_INPUT(found != weights.tensors.end() && found->second.shape.rank() >= 1, weights.path,
                        ": no tensor '", head.front(), "' (preset ", model.preset,
                        "'s classifier) to read the class count from: give --classes");
  const std::int64_t classes = found->second.shape[0];
  PHALANX_REQUIRE_INPUT(classes >= 1 && classes <= most_imported_classes, weights.path, ": tensor '",
                        found->second.stored_name, "' gives ", classes, " classes: give --classes");
  return static_cast<int>(classes);
}

// Configs and safetensors headers hold UTF-8: other bytes are refused naming `what` and quoting
// the text up to them (the rest would make the message itself invalid).
void require_utf8(const std::string& text, const std::string& what) {
  const std::size_t offset = first_invalid_utf8(text);
  if (offset != std::string::npos)
    throw_input_error(what + " '" + text.substr(0, offset) + "...': " + utf8_problem(text));
}

// `text` as a JSON string, which YAML also reads (a double-quoted scalar) with every character as
// written; refused naming `what` unless it is UTF-8.
std::string json_quoted(const std::string& text, const std::string& what) {
  require_utf8(text, what);
  return nlohmann::json(text).dump();
}

}  // namespace

ImportResult import_weights(const ImportRequest& request) {
  require_another_file(request.weights, request.output, "safetensors file");
  PHALANX_REQUIRE_INPUT(request.classes >= 0 && request.classes <= most_imported_classes, "--classes ",
                        request.classes, " is not a class count from 1 to ", most_imported_classes);
  // Quoted, not pasted between quotes: a path may hold any character (a tab, a quote).
  const std::string text =
      "name: imported\nmodel:\n  preset: " + json_quoted(request.preset, "--preset") +
      "\ndata:\n  path: " + json_quoted(request.data.empty() ? no_dataset : request.data, "--data") + "\n";
  const config::Config config = config::parse(text, "phalanx checkpoint import --preset");
  PHALANX_REQUIRE_INPUT(request.input.rank() == 3 && request.input.elements() > 0, "--input ",
                        request.input.to_string(), " is not one image H x W x C");
  const StoredWeights weights = read_stored_weights(request.weights);
  ImportResult result;
  result.classes =
      request.classes > 0 ? request.classes : classes_of_file(config.model, request.input, weights);
  const auto backend = backend::make_cpu_backend(1);
  nn::Model model(config.model, request.input, result.classes, *backend, config.seed);
  assign_weights(weights, *backend, model.registry(), HeadMismatch::Refuse);
  result.tensors = model.registry().parameters_info().size() + model.registry().buffers_info().size();
  result.parameters = model.size().parameters;
  write_checkpoint(request.output, *backend, model.registry(), nullptr, TrainingPosition{}, 1, config.seed,
                   config::to_yaml(config));
  return result;
}

std::size_t export_weights(const std::string& checkpoint, const std::string& output,
                           ExportedWeights weights) {
  require_another_file(checkpoint, output, "checkpoint");
  const std::string group = weights == ExportedWeights::Average ? "/ema" : "/model";
  std::vector<ModelTensor> tensors = OpenCheckpoint(checkpoint).model_tensors(group);
  // An emptied group (an edited file) would export a header and no weights, which torch loads into
  // no model: nothing a user asked for.
  PHALANX_REQUIRE_INPUT(!tensors.empty(), checkpoint, ": ", group,
                        ": holds no tensors, so there is nothing to export");
  std::vector<SafetensorsTensor> torch_tensors;
  // torch's name of each dataset, and the dataset it came from: two datasets may not meet in one
  // name (a/b and a.b), and a name must be UTF-8, as safetensors' JSON header holds it.
  std::map<std::string, std::string> datasets_by_name;
  for (ModelTensor& tensor : tensors) {
    const std::string dataset = tensor.name;
    std::replace(tensor.name.begin(), tensor.name.end(), '/', '.');
    require_utf8(tensor.name, checkpoint + ": dataset");
    const auto [earlier, added] = datasets_by_name.emplace(tensor.name, dataset);
    PHALANX_REQUIRE_INPUT(added, checkpoint, ": datasets '", earlier->second, "' and '", dataset,
                          "' would both be torch's tensor '", tensor.name, "'");
    torch_tensors.push_back({tensor.name, tensor.shape, std::move(tensor.values)});
  }
  write_safetensors(output, torch_tensors, {{"format", "pt"}});
  return torch_tensors.size();
}

}  // namespace phalanx::train
