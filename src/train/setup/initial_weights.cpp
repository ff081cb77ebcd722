// train.freeze and model.init_from at the start of training (initial_weights.hpp).
#include "setup/initial_weights.hpp"

#include <set>

#include "phalanx/core/error.hpp"
#include "phalanx/train/pretrained_weights.hpp"

namespace phalanx::train {

void freeze_parameters(const config::Config& config, nn::ParameterRegistry& registry,
                       InitialWeights& initial) {
  for (const std::string& prefix : config.train.freeze) {
    if (registry.freeze(prefix) > 0) continue;
    std::set<std::string> layers;
    for (const auto& info : registry.parameters_info())
      layers.insert(info.name.substr(0, info.name.find('/')));
    std::string known;
    for (const std::string& layer : layers) known += (known.empty() ? "" : ", ") + layer;
    throw_input_error("train.freeze: '" + prefix +
                      "' names no parameter of the model (its top-level layers: " + known + ")");
  }
  for (const auto& info : registry.parameters_info()) {
    if (!info.frozen) continue;
    ++initial.frozen_tensors;
    initial.frozen_values += info.count;
  }
}

void initialise_from_file(const config::Config& config, int classes, backend::Backend& backend,
                          nn::ParameterRegistry& registry, InitialWeights& initial) {
  const StoredWeights weights = read_stored_weights(config.model.init_from);
  initial.reinitialised = assign_weights(weights, backend, registry, HeadMismatch::Reinitialise,
                                         classifier_head(registry, classes));
  initial.file = config.model.init_from;
  initial.tensors = registry.parameters_info().size() + registry.buffers_info().size();
}

}  // namespace phalanx::train
