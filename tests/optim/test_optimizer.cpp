// The table of optimizer kinds: every kind the table lists is one the config accepts, is made
// with its state buffers zeroed and named as PyTorch names them, and its step writes each named
// buffer as torch.optim does after one step; an unknown type is an input error listing the kinds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/optim/optimizer.hpp"

namespace phalanx::optim {
namespace {

class OptimizerKinds : public ::testing::Test {
 protected:
  std::vector<float> host(const Tensor& tensor, std::int64_t elements) {
    std::vector<float> values(static_cast<std::size_t>(elements));
    backend_->copy_to_host(values.data(), tensor.data(), values.size() * sizeof(float));
    return values;
  }
  // The optimizer of `config` after one step of one parameter of four zeros whose gradient is
  // 1, 2, 3, 4, from zeroed state.
  std::unique_ptr<Optimizer> stepped_once(const config::OptimizerConfig& config) {
    nn::ParameterRegistry registry;
    registry.declare_parameter("weight", Shape{4}, nn::Initializer::Zeros, 1);
    registry.allocate(*backend_, 0);
    std::vector<float> gradients(static_cast<std::size_t>(registry.parameter_count()), 0.0f);
    for (std::size_t index = 0; index < 4; ++index) gradients[index] = static_cast<float>(index + 1);
    backend_->copy_from_host(registry.gradients().data(), gradients.data(), gradients.size() * sizeof(float));
    auto optimizer = make_optimizer(config, *backend_, registry.parameter_count());
    optimizer->step(registry, 0.1, 1);
    return optimizer;
  }
  std::unique_ptr<backend::Backend> backend_ = backend::make_cpu_backend(1);
};

TEST_F(OptimizerKinds, TheTableNamesTheKindsAndTheirStatesAsPyTorchDoes) {
  EXPECT_EQ(optimizer_types(), (std::vector<std::string>{"sgd", "adamw"}));
  config::OptimizerConfig config;
  config.type = config::OptimizerType::Sgd;
  EXPECT_EQ(optimizer_state_names(config), (std::vector<std::string>{"momentum_buffer"}));
  config.type = config::OptimizerType::AdamW;
  EXPECT_EQ(optimizer_state_names(config), (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
}

TEST_F(OptimizerKinds, EveryKindIsAcceptedByTheConfigAndMadeWithItsZeroedStates) {
  for (const std::string& type : optimizer_types()) {
    SCOPED_TRACE(type);
    const config::Config parsed = config::parse(
        "model: {preset: lenet5}\ndata: {path: d.h5}\noptimizer: {type: " + type + "}\n", "x.yaml");
    ASSERT_EQ(config::name_of(parsed.optimizer.type), type);
    const auto optimizer = make_optimizer(parsed.optimizer, *backend_, 37);
    EXPECT_EQ(optimizer->type(), type);
    const std::vector<std::string> names = optimizer->state_names();
    EXPECT_EQ(names, optimizer_state_names(parsed.optimizer));
    ASSERT_FALSE(names.empty());
    for (const auto& name : names) {
      const Tensor& state = optimizer->state(name);
      EXPECT_EQ(state.elements(), 37) << name;
      EXPECT_EQ(host(state, 37), std::vector<float>(37, 0.0f)) << name;
      for (const auto& other : names) {
        if (other != name) {
          EXPECT_NE(state.data(), optimizer->state(other).data()) << name << " " << other;
        }
      }
    }
    try {
      optimizer->state("no_such_state");
      FAIL() << "expected an error";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(type + " has no state 'no_such_state'"), std::string::npos)
          << error.what();
    }
  }
}

// One step from zero state writes each buffer under its own name: SGD's momentum buffer is the
// gradient; AdamW's exp_avg is (1 - beta1) g and exp_avg_sq (1 - beta2) g^2.
TEST_F(OptimizerKinds, AStepWritesEachNamedState) {
  config::OptimizerConfig config;
  config.type = config::OptimizerType::Sgd;
  config.momentum = 0.9;
  config.weight_decay = 0.0;
  const auto sgd = stepped_once(config);
  const std::vector<float> momentum = host(sgd->state("momentum_buffer"), 4);
  for (int index = 0; index < 4; ++index) EXPECT_FLOAT_EQ(momentum[index], static_cast<float>(index + 1));

  config.type = config::OptimizerType::AdamW;
  config.beta1 = 0.9;
  config.beta2 = 0.99;
  const auto adamw = stepped_once(config);
  const std::vector<float> first = host(adamw->state("exp_avg"), 4);
  const std::vector<float> second = host(adamw->state("exp_avg_sq"), 4);
  for (int index = 0; index < 4; ++index) {
    const float gradient = static_cast<float>(index + 1);
    EXPECT_NEAR(first[index], 0.1f * gradient, 1e-6f);
    EXPECT_NEAR(second[index], 0.01f * gradient * gradient, 1e-6f);
  }
}

// The config's words and the table of kinds are the same list: every word the reader accepts has
// a kind to make (an unknown word never gets this far: the reader refuses it, with a suggestion).
TEST_F(OptimizerKinds, EveryConfigWordHasAKind) {
  EXPECT_EQ(optimizer_types(), config::names_of<config::OptimizerType>());
}

}  // namespace
}  // namespace phalanx::optim
