// Optimizer: updates the flat parameter buffer from the flat gradient buffer in one fused pass
// (SGD with momentum/Nesterov/weight decay, or AdamW), with its state in flat buffers of the
// same layout so checkpoints can slice it per parameter.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/tensor.hpp"
#include "phalanx/nn/parameter_registry.hpp"

namespace phalanx::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string type() const = 0;
  // One update at `learning_rate`; `step` is the 1-based count of updates so far, this one included.
  virtual void step(nn::ParameterRegistry& registry, double learning_rate, std::int64_t step) = 0;
  // Per-parameter state names in PyTorch's optimizer state_dict vocabulary.
  virtual std::vector<std::string> state_names() const = 0;
  // Flat state buffer for a name (same layout as the parameter buffer).
  virtual Tensor& state(const std::string& name) = 0;
};

// The optimizer.type of every kind of optimizer, in the order of the one table of kinds that
// optimizer_state_names and make_optimizer read.
std::vector<std::string> optimizer_types();

// The state names the optimizer of `config` keeps, each a buffer of the parameters' size (what
// its memory costs, known before it is made). Throws InvalidInput for an unknown optimizer.
std::vector<std::string> optimizer_state_names(const config::OptimizerConfig& config);

std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& config, backend::Backend& backend,
                                          std::int64_t parameter_elements);

}  // namespace phalanx::optim
