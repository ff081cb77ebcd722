// SGD and AdamW over the flat buffers; each step is one backend call over every parameter.
#include "phalanx/optim/optimizer.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::optim {
namespace {

class Sgd final : public Optimizer {
 public:
  Sgd(const config::OptimizerConfig& config, backend::Backend& backend, std::int64_t elements)
      : config_(config),
        backend_(backend),
        momentum_buffer_(backend, Shape{std::max<std::int64_t>(elements, 1)}) {
    backend.fill(momentum_buffer_.data(), momentum_buffer_.elements(), 0.0f);
  }
  std::string type() const override { return "sgd"; }
  void step(nn::ParameterRegistry& registry, double learning_rate, std::int64_t) override {
    backend::SgdHyperparameters hyperparameters;
    hyperparameters.learning_rate = static_cast<float>(learning_rate);
    hyperparameters.momentum = static_cast<float>(config_.momentum);
    hyperparameters.weight_decay = static_cast<float>(config_.weight_decay);
    hyperparameters.nesterov = config_.nesterov;
    backend_.sgd_step(registry.parameter_count(), hyperparameters, registry.parameters().data(),
                      registry.gradients().data(), momentum_buffer_.data());
  }
  std::vector<std::string> state_names() const override { return optimizer_state_names(config_); }
  Tensor& state(const std::string& name) override {
    PHALANX_CHECK(name == "momentum_buffer", "sgd has no state '", name, "'");
    return momentum_buffer_;
  }

 private:
  config::OptimizerConfig config_;
  backend::Backend& backend_;
  Tensor momentum_buffer_;
};

class AdamW final : public Optimizer {
 public:
  AdamW(const config::OptimizerConfig& config, backend::Backend& backend, std::int64_t elements)
      : config_(config),
        backend_(backend),
        first_moment_(backend, Shape{std::max<std::int64_t>(elements, 1)}),
        second_moment_(backend, Shape{std::max<std::int64_t>(elements, 1)}) {
    backend.fill(first_moment_.data(), first_moment_.elements(), 0.0f);
    backend.fill(second_moment_.data(), second_moment_.elements(), 0.0f);
  }
  std::string type() const override { return "adamw"; }
  void step(nn::ParameterRegistry& registry, double learning_rate, std::int64_t step) override {
    backend::AdamWHyperparameters hyperparameters;
    hyperparameters.learning_rate = static_cast<float>(learning_rate);
    hyperparameters.beta1 = static_cast<float>(config_.beta1);
    hyperparameters.beta2 = static_cast<float>(config_.beta2);
    hyperparameters.epsilon = static_cast<float>(config_.epsilon);
    hyperparameters.weight_decay = static_cast<float>(config_.weight_decay);
    hyperparameters.step = step;
    backend_.adamw_step(registry.parameter_count(), hyperparameters, registry.parameters().data(),
                        registry.gradients().data(), first_moment_.data(), second_moment_.data());
  }
  std::vector<std::string> state_names() const override { return optimizer_state_names(config_); }
  Tensor& state(const std::string& name) override {
    if (name == "exp_avg") return first_moment_;
    PHALANX_CHECK(name == "exp_avg_sq", "adamw has no state '", name, "'");
    return second_moment_;
  }

 private:
  config::OptimizerConfig config_;
  backend::Backend& backend_;
  Tensor first_moment_, second_moment_;
};

}  // namespace

std::vector<std::string> optimizer_state_names(const config::OptimizerConfig& config) {
  if (config.type == "sgd") return {"momentum_buffer"};
  if (config.type == "adamw") return {"exp_avg", "exp_avg_sq"};
  throw_input_error("optimizer.type: unknown optimizer '" + config.type + "' (known: sgd, adamw)");
}

std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& config, backend::Backend& backend,
                                          std::int64_t parameter_elements) {
  if (config.type == "sgd") return std::make_unique<Sgd>(config, backend, parameter_elements);
  if (config.type == "adamw") return std::make_unique<AdamW>(config, backend, parameter_elements);
  throw_input_error("optimizer.type: unknown optimizer '" + config.type + "' (known: sgd, adamw)");
}

}  // namespace phalanx::optim
