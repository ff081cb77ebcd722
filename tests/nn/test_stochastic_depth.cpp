// Stochastic depth on a residual block (torchvision.ops.StochasticDepth, mode "row"): the share
// of samples whose main path is dropped, the 1/(1-p) scale of the kept ones, the same draws for
// the same (seed, step, rank) and other draws for another step or rank, the identity in
// evaluation, and the gradient of the kept and dropped samples.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "phalanx/nn/model.hpp"

namespace phalanx::nn {
namespace {

constexpr float probability = 0.3f;
constexpr std::int64_t batch = 20000;

// One value per sample; the main path is a ReLU, the shortcut the identity, so with inputs of 1
// the output is 1 + 1/(1-p) where the path is kept and 1 where it is dropped.
struct Block {
  std::unique_ptr<backend::Backend> backend = backend::make_cpu_backend(1);
  std::unique_ptr<Model> model;
  Tensor input;

  Block() {
    config::LayerSpec relu;
    relu.type = "relu";
    config::LayerSpec residual;
    residual.type = "residual";
    residual.main = {relu};
    residual.relu_after = false;
    residual.stochastic_depth = probability;
    config::ModelConfig config;
    config.layers = {residual};
    model = std::make_unique<Model>(config, Shape{1, 1, 1}, 1, *backend, 0);
    input = Tensor(*backend, Shape{batch, 1, 1, 1});
    backend->fill(input.data(), batch, 1.0f);
  }

  std::vector<float> forward(Mode mode, std::uint64_t seed, std::int64_t step, int rank) {
    const Tensor& output = model->forward(input, ForwardContext{mode, seed, step, rank});
    std::vector<float> values(static_cast<std::size_t>(batch));
    backend->copy_to_host(values.data(), output.data(), values.size() * sizeof(float));
    return values;
  }
};

const float kept_value = 1.0f + 1.0f / (1.0f - probability);

TEST(StochasticDepth, DropsTheShareOfSamplesItIsToldAndScalesTheKeptOnes) {
  Block block;
  const std::vector<float> output = block.forward(Mode::Training, 42, 7, 0);
  std::int64_t dropped = 0;
  for (const float value : output) {
    ASSERT_TRUE(value == 1.0f || value == kept_value) << value;
    dropped += value == 1.0f ? 1 : 0;
  }
  // Binomial(20000, 0.3): standard deviation 65 samples; five of them either side.
  EXPECT_NEAR(static_cast<double>(dropped), probability * batch, 5 * std::sqrt(batch * 0.3 * 0.7));
}

TEST(StochasticDepth, DrawsArePureFunctionsOfSeedStepAndRank) {
  Block block;
  const std::vector<float> first = block.forward(Mode::Training, 42, 7, 0);
  EXPECT_EQ(block.forward(Mode::Training, 42, 7, 0), first);  // a resumed run draws the same
  Block other_model;                                          // and so does another process
  EXPECT_EQ(other_model.forward(Mode::Training, 42, 7, 0), first);
  EXPECT_NE(block.forward(Mode::Training, 42, 8, 0), first);
  EXPECT_NE(block.forward(Mode::Training, 42, 7, 1), first);
  EXPECT_NE(block.forward(Mode::Training, 43, 7, 0), first);
}

TEST(StochasticDepth, EvaluationKeepsEveryPathUnscaled) {
  Block block;
  for (const float value : block.forward(Mode::Evaluation, 42, 7, 0)) ASSERT_EQ(value, 2.0f);
}

TEST(StochasticDepth, GradientFollowsTheKeptPathsOnly) {
  Block block;
  const std::vector<float> output = block.forward(Mode::Training, 42, 7, 0);
  Tensor grad_output(*block.backend, Shape{batch, 1, 1, 1});
  block.backend->fill(grad_output.data(), batch, 1.0f);
  Tensor grad_input(*block.backend, Shape{batch, 1, 1, 1});
  // The block itself, for its input gradient (the model computes none for its first layer).
  Layer& residual = *block.model->network().layers().front();
  const Tensor& output_tensor = block.model->forward(block.input, ForwardContext{Mode::Training, 42, 7, 0});
  residual.backward(*block.backend, block.model->registry(), block.input, output_tensor, grad_output,
                    &grad_input, {});
  std::vector<float> gradient(static_cast<std::size_t>(batch));
  block.backend->copy_to_host(gradient.data(), grad_input.data(), gradient.size() * sizeof(float));
  // d(output)/d(input): 1 through the shortcut, plus 1/(1-p) through a kept ReLU path.
  for (std::size_t sample = 0; sample < gradient.size(); ++sample)
    ASSERT_EQ(gradient[sample], output[sample] == 1.0f ? 1.0f : kept_value) << "sample " << sample;
}

}  // namespace
}  // namespace phalanx::nn
