// train.freeze in the optimizer: a frozen parameter gets no step, no weight decay and no change of
// its state, whatever its gradient, while the parameters around it step exactly as they would
// with nothing frozen; for SGD with momentum and weight decay and for AdamW.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/optim/optimizer.hpp"

namespace phalanx::optim {
namespace {

struct Stepped {
  std::vector<float> parameters;
  std::vector<std::vector<float>> states;
  std::vector<nn::ParameterInfo> infos;
};

// Three parameters ("a/weight" [3], "b/weight" [5], "c/bias" [2]) of values 1..n, gradients of
// 0.5..., state started from 0.25, three steps; `frozen` names the prefixes frozen.
Stepped step_three_times(const config::OptimizerConfig& config, const std::vector<std::string>& frozen) {
  auto backend = backend::make_cpu_backend(1);
  nn::ParameterRegistry registry;
  registry.declare_parameter("a/weight", Shape{3}, nn::Initializer::Zeros, 1);
  registry.declare_parameter("b/weight", Shape{5}, nn::Initializer::Zeros, 1);
  registry.declare_parameter("c/bias", Shape{2}, nn::Initializer::Zeros, 1);
  registry.allocate(*backend, 0);
  for (const std::string& prefix : frozen) EXPECT_GT(registry.freeze(prefix), 0) << prefix;
  const auto count = static_cast<std::size_t>(registry.parameter_count());
  std::vector<float> values(count), gradients(count);
  for (std::size_t index = 0; index < count; ++index) {
    values[index] = 1.0f + static_cast<float>(index);
    gradients[index] = 0.5f - 0.125f * static_cast<float>(index);
  }
  backend->copy_from_host(registry.parameters().data(), values.data(), count * sizeof(float));
  backend->copy_from_host(registry.gradients().data(), gradients.data(), count * sizeof(float));
  auto optimizer = make_optimizer(config, *backend, registry.parameter_count());
  const std::vector<float> start_state(count, 0.25f);
  for (const std::string& name : optimizer->state_names())
    backend->copy_from_host(optimizer->state(name).data(), start_state.data(), count * sizeof(float));
  for (std::int64_t step = 1; step <= 3; ++step) optimizer->step(registry, 0.1, step);
  Stepped result{std::vector<float>(count), {}, registry.parameters_info()};
  backend->copy_to_host(result.parameters.data(), registry.parameters().data(), count * sizeof(float));
  for (const std::string& name : optimizer->state_names()) {
    result.states.emplace_back(count);
    backend->copy_to_host(result.states.back().data(), optimizer->state(name).data(), count * sizeof(float));
  }
  return result;
}

void expect_frozen_b(const config::OptimizerConfig& config) {
  const Stepped free = step_three_times(config, {});
  const Stepped frozen = step_three_times(config, {"b"});
  for (const nn::ParameterInfo& info : frozen.infos) {
    for (std::int64_t element = 0; element < info.count; ++element) {
      const auto index = static_cast<std::size_t>(info.offset + element);
      if (info.name == "b/weight") {
        EXPECT_EQ(frozen.parameters[index], 1.0f + static_cast<float>(index)) << info.name << " moved";
        for (const auto& state : frozen.states)
          EXPECT_EQ(state[index], 0.25f) << info.name << "'s state changed";
        EXPECT_NE(free.parameters[index], frozen.parameters[index]) << "unfrozen, it would have moved";
      } else {
        EXPECT_EQ(frozen.parameters[index], free.parameters[index]) << info.name << "[" << element << "]";
        for (std::size_t state = 0; state < frozen.states.size(); ++state)
          EXPECT_EQ(frozen.states[state][index], free.states[state][index]) << info.name;
      }
    }
  }
}

TEST(FrozenParameters, SgdWithMomentumAndWeightDecayLeavesThemAndTheirMomentum) {
  config::OptimizerConfig config;
  config.type = config::OptimizerType::Sgd;
  config.momentum = 0.9;
  config.nesterov = true;
  config.weight_decay = 0.1;
  expect_frozen_b(config);
}

TEST(FrozenParameters, AdamWLeavesThemAndBothMoments) {
  config::OptimizerConfig config;
  config.type = config::OptimizerType::AdamW;
  config.weight_decay = 0.1;
  expect_frozen_b(config);
}

TEST(FrozenParameters, PrefixesMatchWholeNameComponents) {
  nn::ParameterRegistry registry;
  registry.declare_parameter("layer1/0/conv1/weight", Shape{1}, nn::Initializer::Zeros, 1);
  registry.declare_parameter("layer10/conv/weight", Shape{1}, nn::Initializer::Zeros, 1);
  registry.declare_parameter("layer1/0/bn1/weight", Shape{1}, nn::Initializer::Zeros, 1);
  EXPECT_EQ(registry.freeze("layer"), 0);
  EXPECT_EQ(registry.freeze("layer1/0/conv"), 0);
  EXPECT_FALSE(registry.any_frozen());
  EXPECT_EQ(registry.freeze("layer1/0/bn1/weight"), 1);
  EXPECT_EQ(registry.freeze("layer1"), 2);
  EXPECT_TRUE(registry.frozen(0));
  EXPECT_FALSE(registry.frozen(1));
  EXPECT_TRUE(registry.frozen(2));
}

}  // namespace
}  // namespace phalanx::optim
