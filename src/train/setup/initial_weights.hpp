// The model's state before its first step beyond the seeded initialisation: train.freeze marks
// parameters the optimizer leaves alone, and model.init_from sets the weights from a file.
#pragma once

#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/nn/parameter_registry.hpp"

namespace phalanx::train {

struct InitialWeights {
  std::string file;                        // model.init_from as read; empty: none read
  std::size_t tensors = 0;                 // parameters and buffers taken from it
  std::vector<std::string> reinitialised;  // classifier-head tensors kept fresh (another class count)
  int frozen_tensors = 0;                  // parameters under train.freeze
  std::int64_t frozen_values = 0;
};

// Marks the parameters under each train.freeze prefix frozen; a prefix that names no parameter
// is refused (InvalidInput naming it and the model's top-level layers).
void freeze_parameters(const config::Config& config, nn::ParameterRegistry& registry,
                       InitialWeights& initial);

// Sets the parameters and batch-norm buffers from model.init_from: names and shapes must match,
// except the classifier head's tensors when only the class count differs (kept as initialised
// and listed). InvalidInput names the tensor, both shapes and the file.
void initialise_from_file(const config::Config& config, int classes, backend::Backend& backend,
                          nn::ParameterRegistry& registry, InitialWeights& initial);

}  // namespace phalanx::train
