// Weights from a safetensors file or a phalanx checkpoint into a model (pretrained_weights.hpp).
// Every tensor is checked before any is written, so a refused file leaves the model as it was.
#include "phalanx/train/pretrained_weights.hpp"

#include <algorithm>
#include <fstream>

#include "phalanx/core/error.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/safetensors.hpp"

namespace phalanx::train {
namespace {

bool is_phalanx_checkpoint(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::string start(23, '\0');
  file.read(start.data(), static_cast<std::streamsize>(start.size()));
  start.resize(static_cast<std::size_t>(std::max<std::streamsize>(file.gcount(), 0)));
  return start.starts_with("phalanx-checkpoint-seal") || start.starts_with("\x89HDF\r\n\x1a\n");
}

std::string torch_name(std::string name) {
  std::replace(name.begin(), name.end(), '/', '.');
  return name;
}

void add_tensor(StoredWeights& weights, const std::string& name, StoredTensor tensor) {
  const auto [place, added] = weights.tensors.try_emplace(name, std::move(tensor));
  PHALANX_REQUIRE_INPUT(added, weights.path, ": tensors '", place->second.stored_name, "' and '",
                        tensor.stored_name, "' are both '", name, "' to phalanx");
}

}  // namespace

StoredWeights read_stored_weights(const std::string& path) {
  StoredWeights weights;
  weights.path = path;
  const std::string counter = "num_batches_tracked";
  if (is_phalanx_checkpoint(path)) {
    const OpenCheckpoint checkpoint(path);
    for (ModelTensor& tensor : checkpoint.model_tensors())
      add_tensor(weights, tensor.name, StoredTensor{tensor.name, tensor.shape, std::move(tensor.values)});
    return weights;
  }
  const SafetensorsFile file(path);
  for (const SafetensorsEntry& entry : file.entries()) {
    if (entry.name == counter || entry.name.ends_with("." + counter)) continue;
    std::string name = entry.name;
    std::replace(name.begin(), name.end(), '.', '/');
    add_tensor(weights, name, StoredTensor{entry.name, entry.shape, file.values(entry)});
  }
  return weights;
}

std::vector<std::string> classifier_head(const nn::ParameterRegistry& registry, int classes) {
  const auto& parameters = registry.parameters_info();
  if (parameters.empty()) return {};
  const auto layer_of = [](const std::string& name) { return name.substr(0, name.rfind('/') + 1); };
  const std::string last_layer = layer_of(parameters.back().name);
  std::vector<std::string> head;
  for (auto parameter = parameters.rbegin(); parameter != parameters.rend(); ++parameter) {
    if (layer_of(parameter->name) != last_layer) break;
    if (parameter->shape.rank() == 0 || parameter->shape[0] != classes) return {};
    head.push_back(parameter->name);
  }
  std::reverse(head.begin(), head.end());
  return head;
}

std::vector<std::string> assign_weights(const StoredWeights& weights, backend::Backend& backend,
                                        nn::ParameterRegistry& registry, HeadMismatch head,
                                        const std::vector<std::string>& head_names) {
  const std::string& path = weights.path;
  std::vector<std::string> reinitialised;
  std::vector<std::string> matched;
  // Host copies of the flat buffers: the fresh values stay where a head tensor is reinitialised.
  std::vector<float> parameters(static_cast<std::size_t>(registry.parameter_count()));
  std::vector<float> buffers(static_cast<std::size_t>(registry.buffer_count()));
  if (!parameters.empty())
    backend.copy_to_host(parameters.data(), registry.parameters().data(), parameters.size() * sizeof(float));
  if (!buffers.empty())
    backend.copy_to_host(buffers.data(), registry.buffers().data(), buffers.size() * sizeof(float));
  for (auto [infos, flat] :
       {std::pair{&registry.parameters_info(), &parameters}, std::pair{&registry.buffers_info(), &buffers}}) {
    for (const nn::ParameterInfo& info : *infos) {
      const auto found = weights.tensors.find(info.name);
      PHALANX_REQUIRE_INPUT(found != weights.tensors.end(), path, ": the model's tensor '",
                            torch_name(info.name), "' (shape ", info.shape.to_string(),
                            ") is not in the file");
      matched.push_back(info.name);
      const StoredTensor& tensor = found->second;
      if (tensor.shape == info.shape) {
        std::copy(tensor.values.begin(), tensor.values.end(), flat->begin() + info.offset);
        continue;
      }
      // Another class count: the same tensor but for its first dimension.
      const bool other_classes =
          head == HeadMismatch::Reinitialise &&
          std::find(head_names.begin(), head_names.end(), info.name) != head_names.end() &&
          tensor.shape.rank() == info.shape.rank() &&
          std::equal(tensor.shape.dims().begin() + 1, tensor.shape.dims().end(),
                     info.shape.dims().begin() + 1);
      PHALANX_REQUIRE_INPUT(other_classes, path, ": tensor '", tensor.stored_name, "' has shape ",
                            tensor.shape.to_string(), " in the file but ", info.shape.to_string(),
                            " in the model");
      reinitialised.push_back(info.name);
    }
  }
  for (const auto& [name, tensor] : weights.tensors)
    PHALANX_REQUIRE_INPUT(std::find(matched.begin(), matched.end(), name) != matched.end(), path,
                          ": tensor '", tensor.stored_name, "' (shape ", tensor.shape.to_string(),
                          ") is not in the model (", weights.tensors.size() - matched.size(),
                          " of the file's tensors are not)");
  if (!parameters.empty())
    backend.copy_from_host(registry.parameters().data(), parameters.data(),
                           parameters.size() * sizeof(float));
  if (!buffers.empty())
    backend.copy_from_host(registry.buffers().data(), buffers.data(), buffers.size() * sizeof(float));
  return reinitialised;
}

}  // namespace phalanx::train
