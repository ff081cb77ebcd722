// SGD and AdamW over the flat buffers; each step is one backend call over every parameter. The
// kinds of optimizer are one table (optimizer_kinds): its name, the state buffers it keeps and how
// it is made, which the memory check, the factory and checkpoints all read, so adding an optimizer
// is its class and one row.
#include "phalanx/optim/optimizer.hpp"

#include <algorithm>

#include "phalanx/core/error.hpp"

namespace phalanx::optim {
namespace {

struct OptimizerKind;
using MakeOptimizer = std::unique_ptr<Optimizer> (*)(const OptimizerKind& kind,
                                                     const config::OptimizerConfig& config,
                                                     backend::Backend& backend, std::int64_t elements);

struct OptimizerKind {
  config::OptimizerType type;            // optimizer.type
  std::vector<std::string> state_names;  // PyTorch's state_dict names, in the order the kind uses them
  MakeOptimizer make;
};

// An optimizer whose name and state come from its row of the table: one zeroed buffer of the
// parameters' size per state name.
class TabledOptimizer : public Optimizer {
 public:
  TabledOptimizer(const OptimizerKind& kind, backend::Backend& backend, std::int64_t elements) : kind_(kind) {
    states_.reserve(kind.state_names.size());
    for (std::size_t index = 0; index < kind.state_names.size(); ++index) {
      states_.emplace_back(backend, Shape{std::max<std::int64_t>(elements, 1)});
      backend.fill(states_.back().data(), states_.back().elements(), 0.0f);
    }
  }
  std::string type() const override { return config::name_of(kind_.type); }
  std::vector<std::string> state_names() const override { return kind_.state_names; }
  Tensor& state(const std::string& name) override {
    const auto& names = kind_.state_names;
    const auto found = std::find(names.begin(), names.end(), name);
    PHALANX_CHECK(found != names.end(), kind_.type, " has no state '", name, "'");
    return states_[static_cast<std::size_t>(found - names.begin())];
  }

 protected:
  // The buffer of the kind's `index`-th state name.
  float* state_data(std::size_t index) { return states_[index].data(); }

  // Calls `update(offset, count)` for each run of consecutive trainable parameters: frozen ones
  // (train.freeze) get no step, no weight decay and no change of their state. Without frozen
  // parameters it is one run over the whole buffer, the alignment gaps included.
  template <typename Update>
  static void for_each_trainable_run(const nn::ParameterRegistry& registry, Update&& update) {
    if (!registry.any_frozen()) {
      update(std::int64_t{0}, registry.parameter_count());
      return;
    }
    std::int64_t begin = -1, end = 0;
    for (const auto& info : registry.parameters_info()) {
      if (info.frozen) {
        if (begin >= 0) update(begin, end - begin);
        begin = -1;
        continue;
      }
      if (begin < 0) begin = info.offset;
      end = info.offset + info.count;
    }
    if (begin >= 0) update(begin, end - begin);
  }

 private:
  const OptimizerKind& kind_;
  std::vector<Tensor> states_;
};

class Sgd final : public TabledOptimizer {
 public:
  Sgd(const OptimizerKind& kind, const config::OptimizerConfig& config, backend::Backend& backend,
      std::int64_t elements)
      : TabledOptimizer(kind, backend, elements), config_(config), backend_(backend) {}
  void step(nn::ParameterRegistry& registry, double learning_rate, std::int64_t) override {
    backend::SgdHyperparameters hyperparameters;
    hyperparameters.learning_rate = static_cast<float>(learning_rate);
    hyperparameters.momentum = static_cast<float>(config_.momentum);
    hyperparameters.weight_decay = static_cast<float>(config_.weight_decay);
    hyperparameters.nesterov = config_.nesterov;
    for_each_trainable_run(registry, [&](std::int64_t offset, std::int64_t count) {
      backend_.sgd_step(count, hyperparameters, registry.parameters().data() + offset,
                        registry.gradients().data() + offset, state_data(0) + offset);
    });
  }

 private:
  config::OptimizerConfig config_;
  backend::Backend& backend_;
};

class AdamW final : public TabledOptimizer {
 public:
  AdamW(const OptimizerKind& kind, const config::OptimizerConfig& config, backend::Backend& backend,
        std::int64_t elements)
      : TabledOptimizer(kind, backend, elements), config_(config), backend_(backend) {}
  void step(nn::ParameterRegistry& registry, double learning_rate, std::int64_t step) override {
    backend::AdamWHyperparameters hyperparameters;
    hyperparameters.learning_rate = static_cast<float>(learning_rate);
    hyperparameters.beta1 = static_cast<float>(config_.beta1);
    hyperparameters.beta2 = static_cast<float>(config_.beta2);
    hyperparameters.epsilon = static_cast<float>(config_.epsilon);
    hyperparameters.weight_decay = static_cast<float>(config_.weight_decay);
    hyperparameters.step = step;
    for_each_trainable_run(registry, [&](std::int64_t offset, std::int64_t count) {
      backend_.adamw_step(count, hyperparameters, registry.parameters().data() + offset,
                          registry.gradients().data() + offset, state_data(0) + offset,
                          state_data(1) + offset);
    });
  }

 private:
  config::OptimizerConfig config_;
  backend::Backend& backend_;
};

template <typename Kind>
std::unique_ptr<Optimizer> make(const OptimizerKind& kind, const config::OptimizerConfig& config,
                                backend::Backend& backend, std::int64_t elements) {
  return std::make_unique<Kind>(kind, config, backend, elements);
}

const std::vector<OptimizerKind>& optimizer_kinds() {
  static const std::vector<OptimizerKind> kinds = {
      {config::OptimizerType::Sgd, {"momentum_buffer"}, make<Sgd>},
      {config::OptimizerType::AdamW, {"exp_avg", "exp_avg_sq"}, make<AdamW>},  // first moment, second moment
  };
  return kinds;
}

const OptimizerKind& optimizer_kind(config::OptimizerType type) {
  for (const auto& kind : optimizer_kinds())
    if (type == kind.type) return kind;
  PHALANX_CHECK(false, "optimizer.type ", type, " has no row in the table of kinds");
  return optimizer_kinds().front();
}

}  // namespace

std::vector<std::string> optimizer_types() {
  std::vector<std::string> types;
  for (const auto& kind : optimizer_kinds()) types.push_back(config::name_of(kind.type));
  return types;
}

std::vector<std::string> optimizer_state_names(const config::OptimizerConfig& config) {
  return optimizer_kind(config.type).state_names;
}

std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& config, backend::Backend& backend,
                                          std::int64_t parameter_elements) {
  const OptimizerKind& kind = optimizer_kind(config.type);
  return kind.make(kind, config, backend, parameter_elements);
}

}  // namespace phalanx::optim
