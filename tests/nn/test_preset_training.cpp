// A few training steps of the torchvision presets with stochastic depth, squeeze-and-excitation
// and their activations on a fixed batch of random images: SGD steps on the CPU backend must give
// finite losses that fall as the network fits the batch, and a preset's evaluation pass (no
// dropout, no stochastic depth, running statistics) must be the same on two calls.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "phalanx/core/random.hpp"
#include "phalanx/nn/model.hpp"

namespace phalanx::nn {
namespace {

struct Training {
  std::unique_ptr<backend::Backend> backend = backend::make_cpu_backend(0);
  std::unique_ptr<Model> model;
  Tensor images, grad_logits, momentum;
  std::vector<std::int32_t> labels;
  int batch;

  Training(const std::string& preset, Shape sample, int classes, int batch_size) : batch(batch_size) {
    config::ModelConfig config;
    config.preset = preset;
    model = std::make_unique<Model>(config, sample, classes, *backend, 3);
    images = Tensor(*backend, Shape{batch, sample[0], sample[1], sample[2]});
    std::vector<float> values(static_cast<std::size_t>(images.elements()));
    RandomStream random(5, 0);
    for (float& value : values) value = random.next_uniform(-1.0f, 1.0f);
    backend->copy_from_host(images.data(), values.data(), values.size() * sizeof(float));
    for (int sample_index = 0; sample_index < batch; ++sample_index) labels.push_back(sample_index % classes);
    grad_logits = Tensor(*backend, Shape{batch, classes});
    momentum = Tensor(*backend, Shape{model->registry().parameter_count()});
    backend->fill(momentum.data(), momentum.elements(), 0.0f);
  }

  double step(std::int64_t step_index) {
    const Tensor& logits = model->forward(images, ForwardContext{Mode::Training, 9, step_index, 0});
    const auto totals = backend->softmax_cross_entropy(batch, model->classes(), logits.data(), labels.data(),
                                                       0.0f, 1.0f / batch, grad_logits.data());
    model->backward(images, grad_logits, {});
    auto& registry = model->registry();
    backend->sgd_step(registry.parameter_count(), backend::SgdHyperparameters{0.01f, 0.9f, 0.0f, false},
                      registry.parameters().data(), registry.gradients().data(), momentum.data());
    return totals.loss_sum / batch;
  }

  std::vector<float> evaluate() {
    const Tensor& logits = model->forward(images, ForwardContext{Mode::Evaluation, 9, 0, 0});
    std::vector<float> values(static_cast<std::size_t>(logits.elements()));
    backend->copy_to_host(values.data(), logits.data(), values.size() * sizeof(float));
    return values;
  }
};

class PresetTraining : public ::testing::TestWithParam<const char*> {};

TEST_P(PresetTraining, LossIsFiniteAndFallsOnAFixedBatch) {
  Training training(GetParam(), Shape{32, 32, 3}, 4, 8);
  std::vector<double> losses;
  for (std::int64_t step = 0; step < 12; ++step) {
    losses.push_back(training.step(step));
    ASSERT_TRUE(std::isfinite(losses.back())) << "step " << step;
  }
  // Dropout and stochastic depth make single steps noisy: compare the first and last three.
  const double first = (losses[0] + losses[1] + losses[2]) / 3,
               last = (losses[9] + losses[10] + losses[11]) / 3;
  EXPECT_LT(last, first) << "losses from " << losses.front() << " to " << losses.back();
  const std::vector<float> evaluation = training.evaluate();
  for (const float value : evaluation) ASSERT_TRUE(std::isfinite(value));
  EXPECT_EQ(training.evaluate(), evaluation);
}

INSTANTIATE_TEST_SUITE_P(Presets, PresetTraining,
                         ::testing::Values("mobilenet_v3_small", "efficientnet_b0", "mobilenet_v2"));

}  // namespace
}  // namespace phalanx::nn
