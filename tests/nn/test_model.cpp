// Model-level tests: finite-difference gradient checks through every layer type as the model
// wires them (residual sums, flatten order, first-layer shortcuts), preset shapes and names (and
// their size counted by the plan before anything is allocated), the two build phases, and the "model
// does not fit the data" errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/nn/model.hpp"

namespace phalanx::nn {
namespace {

config::LayerSpec layer(const std::string& type, int size = 0, int kernel = 3, int stride = 1,
                        int padding = 0) {
  config::LayerSpec spec;
  spec.type = type;
  spec.kernel = kernel;
  spec.stride = stride;
  spec.padding = padding;
  if (type == "conv") spec.out_channels = size;
  if (type == "linear") spec.out_features = size;
  if (type == "max_pool" || type == "avg_pool") spec.stride = 0;
  if (type == "dropout") spec.probability = 0.25f;
  return spec;
}

struct Problem {
  std::unique_ptr<backend::Backend> backend = backend::make_cpu_backend(1);
  std::unique_ptr<Model> model;
  std::vector<float> input;
  std::vector<std::int32_t> labels;
  Shape input_shape;

  Problem(const config::ModelConfig& config, Shape sample, int classes, int batch) {
    model = std::make_unique<Model>(config, sample, classes, *backend, 7);
    input_shape = Shape{batch, sample[0], sample[1], sample[2]};
    std::mt19937 generator(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    input.resize(static_cast<std::size_t>(input_shape.elements()));
    for (auto& value : input) value = normal(generator);
    for (int sample_index = 0; sample_index < batch; ++sample_index) labels.push_back(sample_index % classes);
  }

  // Mean loss of the batch; with gradients when `backward` is set.
  double loss(bool backward) {
    Tensor input_tensor(*backend, input_shape);
    backend->copy_from_host(input_tensor.data(), input.data(), input.size() * sizeof(float));
    ForwardContext context{Mode::Training, 11, 5, 0};
    const Tensor& logits = model->forward(input_tensor, context);
    const int batch = static_cast<int>(input_shape[0]);
    Tensor grad_logits(*backend, logits.shape());
    const auto totals =
        backend->softmax_cross_entropy(batch, model->classes(), logits.data(), labels.data(), 0.0f,
                                       1.0f / batch, backward ? grad_logits.data() : nullptr);
    if (backward) model->backward(input_tensor, grad_logits, {});
    return totals.loss_sum / batch;
  }
};

// Central differences on float32 parameters, eps = 1e-2: rounding noise (~1e-5) stays far below
// the 5e-3 absolute + 5% relative tolerance. A ReLU or max-pool kink inside [x-eps, x+eps]
// makes the difference quotient meaningless there, so an entry whose left and right slopes
// disagree by more than the tolerance is skipped as non-smooth, and at most a quarter may be.
// A wrong gradient fails on the smooth entries, which are the majority.
void expect_gradients_match(Problem& problem, int samples_per_parameter) {
  problem.loss(true);
  auto& registry = problem.model->registry();
  float* parameters = registry.parameters().data();
  const float* gradients = registry.gradients().data();
  const std::vector<float> analytic(gradients, gradients + registry.parameter_count());
  constexpr float epsilon = 1e-2f;
  const double centre = problem.loss(false);
  int checked = 0, skipped = 0;
  for (const auto& info : registry.parameters_info()) {
    if (info.frozen) continue;  // train.freeze: no gradient is computed for it
    const std::int64_t stride = std::max<std::int64_t>(1, info.count / samples_per_parameter);
    for (std::int64_t element = 0; element < info.count; element += stride) {
      float& value = parameters[info.offset + element];
      const float original = value;
      value = original + epsilon;
      const double plus = problem.loss(false);
      value = original - epsilon;
      const double minus = problem.loss(false);
      value = original;
      const double numeric = (plus - minus) / (2.0 * epsilon);
      const double tolerance = 5e-3 + 0.05 * std::fabs(numeric);
      const double right = (plus - centre) / epsilon, left = (centre - minus) / epsilon;
      ++checked;
      if (std::fabs(right - left) > tolerance) {
        ++skipped;
        continue;
      }
      const double exact = analytic[static_cast<std::size_t>(info.offset + element)];
      EXPECT_NEAR(exact, numeric, tolerance) << info.name << "[" << element << "]";
    }
  }
  EXPECT_GT(checked, 10);
  EXPECT_LE(skipped * 4, checked) << skipped << " of " << checked << " entries were not smooth";
}

TEST(ModelGradient, ConvReluPoolFlattenLinear) {
  config::ModelConfig config;
  config.layers = {layer("conv", 4, 3, 1, 1), layer("relu"),           layer("max_pool", 0, 2),
                   layer("conv", 3, 3, 2, 1), layer("avg_pool", 0, 2), layer("flatten"),
                   layer("linear", 6),        layer("relu"),           layer("linear", 5)};
  Problem problem(config, Shape{8, 8, 2}, 5, 4);
  expect_gradients_match(problem, 12);
}

TEST(ModelGradient, BatchNormDropoutGlobalPool) {
  config::ModelConfig config;
  // No ReLU before the batch norms here: BN over a few samples divides by a small spread and
  // so magnifies the kinks a perturbation crosses; ReLU is checked in the other tests.
  config.layers = {layer("conv", 4, 3, 1, 1), layer("batch_norm"), layer("dropout"),
                   layer("global_avg_pool"),  layer("batch_norm"), layer("linear", 3)};
  Problem problem(config, Shape{6, 6, 3}, 3, 6);
  expect_gradients_match(problem, 12);
}

// torchvision's models pool any H x W their strides allow (AdaptiveAvgPool2d(1)): the global pool
// averages a rectangular image, and its gradient spreads 1/(H*W) back over it.
TEST(ModelGradient, GlobalPoolOverARectangularImage) {
  config::ModelConfig config;
  config.layers = {layer("conv", 4, 3, 1, 1), layer("batch_norm"), layer("global_avg_pool"), layer("linear", 3)};
  Problem problem(config, Shape{7, 4, 2}, 3, 5);
  expect_gradients_match(problem, 12);
}

TEST(ModelGradient, ResidualBlocksWithAndWithoutShortcut) {
  config::ModelConfig config;
  config::LayerSpec identity_block = layer("residual");
  identity_block.main = {layer("conv", 3, 3, 1, 1), layer("batch_norm"), layer("conv", 3, 3, 1, 1)};
  identity_block.relu_after = false;
  config::LayerSpec projection_block = layer("residual");
  projection_block.main = {layer("conv", 5, 3, 2, 1), layer("relu"), layer("conv", 5, 3, 1, 1)};
  projection_block.shortcut = {layer("conv", 5, 1, 2, 0), layer("batch_norm")};
  config.layers = {layer("conv", 3, 3, 1, 1), identity_block, projection_block, layer("flatten"),
                   layer("linear", 4)};
  Problem problem(config, Shape{6, 6, 1}, 4, 3);
  expect_gradients_match(problem, 10);
}

// train.freeze: a frozen batch norm is a fixed per-channel affine map from its running statistics
// (torchvision's FrozenBatchNorm2d) in training too, so the gradients through it are those of that
// map; its statistics stay as they are while an unfrozen one's move; a frozen convolution passes
// the data gradient on and computes no weight gradient.
TEST(ModelGradient, FrozenBatchNormAndConvolution) {
  config::ModelConfig config;
  config.layers = {layer("conv", 4, 3, 1, 1), layer("batch_norm"),      layer("conv", 3, 3, 1, 1),
                   layer("batch_norm"),       layer("global_avg_pool"), layer("linear", 3)};
  const char* names[] = {"stem", "bn", "frozen_conv", "frozen_bn", "pool", "fc"};
  for (std::size_t index = 0; index < config.layers.size(); ++index) config.layers[index].name = names[index];
  Problem problem(config, Shape{6, 6, 3}, 3, 6);
  auto& registry = problem.model->registry();
  // Statistics and affine values far from the fresh ones, so a map that ignored them would show.
  std::mt19937 generator(5);
  std::uniform_real_distribution<float> uniform(0.1f, 0.5f);
  float* buffers = registry.buffers().data();
  for (std::int64_t index = 0; index < registry.buffer_count(); ++index) buffers[index] = uniform(generator);
  float* parameters = registry.parameters().data();
  for (const auto& info : registry.parameters_info())
    if (info.name.starts_with("frozen_bn/"))
      for (std::int64_t element = 0; element < info.count; ++element)
        parameters[info.offset + element] = 4.0f * uniform(generator) - 1.0f;
  EXPECT_EQ(registry.freeze("frozen_bn"), 2);
  EXPECT_EQ(registry.freeze("frozen_conv"), 2);
  const std::vector<float> before(buffers, buffers + registry.buffer_count());

  expect_gradients_match(problem, 12);

  for (const auto& info : registry.buffers_info()) {
    const bool changed = !std::equal(before.begin() + info.offset, before.begin() + info.offset + info.count,
                                     buffers + info.offset);
    EXPECT_EQ(changed, info.name.starts_with("bn/")) << info.name;
  }
  for (const auto& info : registry.parameters_info()) {
    if (!info.name.starts_with("frozen_conv/")) continue;
    const float* gradient = registry.gradients().data() + info.offset;
    EXPECT_TRUE(std::all_of(gradient, gradient + info.count, [](float value) { return value == 0.0f; }))
        << info.name << ": a frozen convolution computes no weight gradient";
  }
  // The frozen batch norm's training forward is its evaluation forward: freezing every batch norm
  // makes the two modes give the same loss.
  EXPECT_EQ(registry.freeze("bn"), 2);
  Tensor input_tensor(*problem.backend, problem.input_shape);
  problem.backend->copy_from_host(input_tensor.data(), problem.input.data(),
                                  problem.input.size() * sizeof(float));
  std::vector<float> training(18), evaluation(18);
  const Tensor& training_logits =
      problem.model->forward(input_tensor, ForwardContext{Mode::Training, 1, 0, 0});
  problem.backend->copy_to_host(training.data(), training_logits.data(), training.size() * sizeof(float));
  const Tensor& evaluation_logits =
      problem.model->forward(input_tensor, ForwardContext{Mode::Evaluation, 1, 0, 0});
  problem.backend->copy_to_host(evaluation.data(), evaluation_logits.data(),
                                evaluation.size() * sizeof(float));
  EXPECT_EQ(training, evaluation);
}

config::LayerSpec grouped_conv(int out_channels, int kernel, int stride, int padding, int groups,
                               int dilation) {
  config::LayerSpec spec = layer("conv", out_channels, kernel, stride, padding);
  spec.groups = groups;
  spec.dilation = dilation;
  return spec;
}

// A MobileNet-style stack: a grouped conv, a depthwise conv with stride 2, a 1x1 projection and a
// dilated conv, as the model wires and fuses them.
TEST(ModelGradient, GroupedDepthwiseAndDilatedConvolutions) {
  config::ModelConfig config;
  config.layers = {grouped_conv(6, 3, 1, 1, 2, 1),
                   layer("relu"),
                   grouped_conv(6, 3, 2, 1, 6, 1),
                   layer("batch_norm"),
                   layer("conv", 4, 1, 1, 0),
                   grouped_conv(4, 3, 1, 2, 1, 2),
                   layer("flatten"),
                   layer("linear", 3)};
  Problem problem(config, Shape{8, 8, 4}, 3, 4);
  expect_gradients_match(problem, 12);
}

// Every activation type (silu, relu6, hardswish, hardsigmoid, sigmoid, gelu in both forms) after a
// conv, a batch_norm, a linear and a pool, as the model wires them (and fuses those it can).
TEST(ModelGradient, ActivationLayersAfterEveryKindOfProducer) {
  config::LayerSpec gelu_tanh = layer("gelu");
  gelu_tanh.approximate = "tanh";
  config::ModelConfig config;
  config.layers = {layer("conv", 4, 3, 1, 1), layer("hardswish"),        layer("conv", 4, 3, 1, 1),
                   layer("batch_norm"),       layer("relu6"),            layer("avg_pool", 0, 2),
                   layer("silu"),             layer("conv", 5, 3, 1, 1), layer("sigmoid"),
                   layer("flatten"),          layer("linear", 6),        layer("hardsigmoid"),
                   layer("linear", 6),        layer("gelu"),             layer("linear", 6),
                   gelu_tanh,                 layer("linear", 4)};
  Problem problem(config, Shape{6, 6, 2}, 4, 4);
  std::vector<std::string> types;
  for (const auto& built : problem.model->network().layers()) types.push_back(built->type());
  EXPECT_EQ(types, (std::vector<std::string>{"conv", "hardswish", "conv", "batch_norm", "relu6", "avg_pool",
                                             "silu", "conv", "sigmoid", "flatten", "linear", "hardsigmoid",
                                             "linear", "gelu", "linear", "gelu", "linear"}));
  const auto* tanh_form = dynamic_cast<const Activation*>(problem.model->network().layers()[15].get());
  ASSERT_NE(tanh_form, nullptr);
  EXPECT_EQ(tanh_form->kind(), backend::ActivationKind::GeluTanh);
  expect_gradients_match(problem, 12);
}

// Squeeze-and-excitation alone on 2x2 images with its fc weights scaled up, so that the squeeze
// path's share of the input gradient (through a mean of four positions) is large enough for the
// check to fail without it.
TEST(ModelGradient, SqueezeExcitationCarriesBothPathsGradients) {
  config::ModelConfig config;
  config::LayerSpec squeeze = layer("squeeze_excitation");
  squeeze.squeeze_channels = 4;
  config.layers = {layer("conv", 6, 1, 1, 0), squeeze, layer("flatten"), layer("linear", 3)};
  Problem problem(config, Shape{2, 2, 3}, 3, 5);
  auto& registry = problem.model->registry();
  for (const auto& info : registry.parameters_info())
    if (info.name.find("/fc") != std::string::npos)
      for (std::int64_t index = 0; index < info.count; ++index)
        registry.parameters().data()[info.offset + index] *= 4;
  expect_gradients_match(problem, 24);
}

// Squeeze-and-excitation (gate and squeeze path both carry the input's gradient), inverted
// residuals with and without the sum, one with a squeeze-and-excitation of its own and stochastic
// depth: the step's context draws the same samples on every call, so the loss stays a smooth
// function of the weights and its differences are the gradient of the kept paths.
TEST(ModelGradient, SqueezeExcitationInvertedResidualAndStochasticDepth) {
  config::ModelConfig config;
  config::LayerSpec squeeze = layer("squeeze_excitation");
  squeeze.squeeze_channels = 3;
  config::LayerSpec kept_shape = layer("inverted_residual");
  kept_shape.out_channels = 8;
  kept_shape.expand_ratio = 2.0f;
  kept_shape.activation = "hardswish";
  kept_shape.squeeze_excitation = 0.25f;
  kept_shape.stochastic_depth = 0.5f;
  config::LayerSpec strided = layer("inverted_residual", 0, 5, 2);
  strided.out_channels = 6;
  strided.expand_ratio = 1.5f;
  strided.activation = "silu";
  config.layers = {layer("conv", 8, 3, 1, 1), squeeze,           kept_shape, strided,
                   layer("global_avg_pool"),  layer("linear", 3)};
  Problem problem(config, Shape{6, 6, 4}, 3, 6);
  std::vector<std::string> names;
  for (const auto& info : problem.model->registry().parameters_info()) names.push_back(info.name);
  // torchvision's names under the blocks: squeeze_excitation1/fc1, inverted_residual1/block/K.
  for (const std::string expected :
       {"squeeze_excitation1/fc1/weight", "squeeze_excitation1/fc2/bias",
        "inverted_residual1/block/0/0/weight", "inverted_residual1/block/1/0/weight",
        "inverted_residual1/block/2/fc1/weight", "inverted_residual1/block/3/1/bias",
        "inverted_residual2/block/2/0/weight"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  expect_gradients_match(problem, 8);
}

// The checkpoint's (and PyTorch's) shapes: weight [out, in / groups, k, k], fan-in in / groups * k * k.
TEST(ModelPlan, GroupedConvolutionsDeclarePyTorchsWeightShapes) {
  config::ModelConfig config;
  config.layers = {grouped_conv(32, 3, 1, 1, 16, 1), grouped_conv(8, 3, 1, 2, 4, 2), layer("flatten"),
                   layer("linear", 10)};
  const ModelPlan plan(config, Shape{6, 6, 16}, 10);
  auto backend = backend::make_cpu_backend(1);
  Model model(config, Shape{6, 6, 16}, 10, *backend, 0);
  const auto& infos = model.registry().parameters_info();
  ASSERT_EQ(infos.size(), 6u);
  EXPECT_EQ(infos[0].name, "conv1/weight");
  EXPECT_EQ(infos[0].shape, (Shape{32, 1, 3, 3}));
  EXPECT_EQ(infos[0].fan_in, 9);
  EXPECT_EQ(infos[2].name, "conv2/weight");
  EXPECT_EQ(infos[2].shape, (Shape{8, 8, 3, 3}));
  EXPECT_EQ(infos[2].fan_in, 72);
  // 32*9 + 32, 8*8*9 + 8, then the linear layer over 6x6x8 (dilation 2 with padding 2 keeps 6x6).
  const std::int64_t expected = 32 * 9 + 32 + 8 * 8 * 9 + 8 + 6 * 6 * 8 * 10 + 10;
  EXPECT_EQ(plan.size().parameters, expected);
  std::int64_t declared = 0;
  for (const auto& info : infos) declared += info.count;
  EXPECT_EQ(declared, expected);
}

TEST(ModelGradient, GradientsReadyReportsDescendingOffsets) {
  config::ModelConfig config;
  config::LayerSpec block = layer("residual");
  block.main = {layer("conv", 2, 3, 1, 1), layer("relu"), layer("conv", 2, 3, 1, 1)};
  block.shortcut = {layer("conv", 2, 1, 1, 0)};
  config.layers = {layer("conv", 2, 3, 1, 1), block, layer("flatten"), layer("linear", 3)};
  Problem problem(config, Shape{4, 4, 1}, 3, 2);
  Tensor input(*problem.backend, problem.input_shape);
  problem.backend->copy_from_host(input.data(), problem.input.data(), problem.input.size() * sizeof(float));
  const Tensor& logits = problem.model->forward(input, ForwardContext{});
  Tensor grad(*problem.backend, logits.shape());
  problem.backend->fill(grad.data(), grad.elements(), 0.1f);
  std::vector<std::int64_t> reported;
  problem.model->backward(input, grad, [&](std::int64_t offset) { reported.push_back(offset); });
  ASSERT_FALSE(reported.empty());
  EXPECT_EQ(reported.back(), 0);  // the first layer's parameters are the last to finish
  for (std::size_t index = 1; index < reported.size(); ++index)
    EXPECT_LE(reported[index], reported[index - 1]);
}

TEST(ModelPreset, FashionMnistCnnMatchesThePyTorchNetwork) {
  auto backend = backend::make_cpu_backend(1);
  config::ModelConfig config;
  config.preset = "fmnist_cnn";
  Model model(config, Shape{28, 28, 1}, 10, *backend, 0);
  std::vector<std::pair<std::string, Shape>> expected = {
      {"conv1/weight", Shape{32, 1, 3, 3}},  {"conv1/bias", Shape{32}},
      {"conv2/weight", Shape{64, 32, 3, 3}}, {"conv2/bias", Shape{64}},
      {"fc1/weight", Shape{128, 3136}},      {"fc1/bias", Shape{128}},
      {"fc2/weight", Shape{10, 128}},        {"fc2/bias", Shape{10}}};
  const auto& parameters = model.registry().parameters_info();
  ASSERT_EQ(parameters.size(), expected.size());
  for (std::size_t index = 0; index < expected.size(); ++index) {
    EXPECT_EQ(parameters[index].name, expected[index].first);
    EXPECT_EQ(parameters[index].shape, expected[index].second) << parameters[index].name;
  }
  // PyTorch's default init bound for fc1 is 1/sqrt(3136).
  const float* fc1 = model.registry().parameter(4);
  float largest = 0;
  for (std::int64_t index = 0; index < 128 * 3136; ++index)
    largest = std::max(largest, std::fabs(fc1[index]));
  EXPECT_LE(largest, 1.0f / 56.0f);
  EXPECT_GT(largest, 0.9f / 56.0f);
}

TEST(ModelPreset, ResNet20HasTheCifarParameterCount) {
  auto backend = backend::make_cpu_backend(1);
  config::ModelConfig config;
  config.preset = "resnet20";
  Model model(config, Shape{32, 32, 3}, 10, *backend, 0);
  std::int64_t total = 0;
  bool has_shortcut = false;
  for (const auto& info : model.registry().parameters_info()) {
    total += info.count;
    has_shortcut |= info.name == "layer2/0/shortcut/0/weight";
  }
  // 0.27M as in He et al. (Table 6), plus the 1x1 projection shortcuts (+2.6k).
  EXPECT_GT(total, 268000);
  EXPECT_LT(total, 278000);
  EXPECT_TRUE(has_shortcut);
  EXPECT_EQ(model.registry().buffers_info().front().name, "bn1/running_mean");
  // The memory check's count, taken from the plan before anything is allocated, is the built model's.
  const ModelPlan plan(config, Shape{32, 32, 3}, 10);
  EXPECT_EQ(plan.size().parameters, total);
  EXPECT_EQ(plan.size().parameter_elements, model.registry().parameter_count());
  EXPECT_EQ(plan.size().buffer_elements, model.registry().buffer_count());
  EXPECT_EQ(model.size().parameters, total);
}

// What a torchvision ImageNet preset declares at 1000 classes. 64x64 images keep the activations
// small; the parameters do not depend on the image size.
struct PresetParameters {
  std::int64_t total = 0;
  std::vector<std::string> names;
  std::size_t buffers = 0;
  bool has(const std::string& name) const {
    return std::find(names.begin(), names.end(), name) != names.end();
  }
};

PresetParameters imagenet_preset_parameters(const std::string& preset) {
  auto backend = backend::make_cpu_backend(1);
  config::ModelConfig config;
  config.preset = preset;
  Model model(config, Shape{64, 64, 3}, 1000, *backend, 0);
  PresetParameters parameters;
  for (const auto& info : model.registry().parameters_info()) {
    parameters.total += info.count;
    parameters.names.push_back(info.name);
  }
  parameters.buffers = model.registry().buffers_info().size();
  return parameters;
}

TEST(ModelPreset, ResNet50MatchesTorchvision) {
  const PresetParameters parameters = imagenet_preset_parameters("resnet50");
  // torchvision.models.resnet50(): sum(p.numel() for p in model.parameters()) == 25557032.
  EXPECT_EQ(parameters.total, 25557032);
  for (const std::string expected : {"conv1/weight", "layer1/0/downsample/0/weight", "layer3/5/conv3/weight",
                                     "layer4/2/bn3/bias", "fc/weight", "fc/bias"})
    EXPECT_TRUE(parameters.has(expected)) << expected;
  EXPECT_FALSE(parameters.has("layer1/1/downsample/0/weight"));
}

TEST(ModelPreset, ResNet18MatchesTorchvision) {
  const PresetParameters parameters = imagenet_preset_parameters("resnet18");
  // torchvision.models.resnet18(): sum(p.numel() for p in model.parameters()) == 11689512.
  EXPECT_EQ(parameters.total, 11689512);
  for (const std::string expected :
       {"conv1/weight", "layer2/0/downsample/0/weight", "layer2/0/downsample/1/bias", "layer4/1/conv2/weight",
        "layer4/1/bn2/weight", "fc/weight", "fc/bias"})
    EXPECT_TRUE(parameters.has(expected)) << expected;
  // Only the first block of stages 2-4 changes shape: no projection in layer1 or in second blocks.
  for (const std::string absent : {"layer1/0/downsample/0/weight", "layer3/1/downsample/0/weight"})
    EXPECT_FALSE(parameters.has(absent)) << absent;
  // Running mean and variance of 20 batch norms: the stem's, 2 in each of 8 blocks, 3 projections'.
  EXPECT_EQ(parameters.buffers, 2u * 20u);
}

TEST(ModelErrors, PresetOnTheWrongImageShapeIsAnInputError) {
  auto backend = backend::make_cpu_backend(1);
  config::ModelConfig config;
  config.preset = "fmnist_cnn";
  try {
    Model model(config, Shape{32, 32, 3}, 10, *backend, 0);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("fmnist_cnn"), std::string::npos);
  }
}

TEST(ModelErrors, WrongClassCountAndOversizedKernelNameTheProblem) {
  auto backend = backend::make_cpu_backend(1);
  config::ModelConfig config;
  config.layers = {layer("flatten"), layer("linear", 7)};
  try {
    Model model(config, Shape{4, 4, 1}, 10, *backend, 0);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("10 classes"), std::string::npos) << error.what();
  }
  config.layers = {layer("conv", 2, 7, 1, 0), layer("flatten"), layer("linear", 10)};
  try {
    Model model(config, Shape{4, 4, 1}, 10, *backend, 0);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("conv1"), std::string::npos) << error.what();
  }
  config.layers = {layer("linear", 10)};
  try {
    Model model(config, Shape{4, 4, 1}, 10, *backend, 0);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("flatten"), std::string::npos) << error.what();
  }
}

// Groups that do not divide the channels and a dilated kernel wider than the padded input are the
// user's error (exit 2), named by the layer and the key.
TEST(ModelErrors, GroupsAndDilationThatDoNotFitNameTheKey) {
  const auto expect_error = [](const std::vector<config::LayerSpec>& layers, Shape sample,
                               const std::vector<std::string>& fragments) {
    config::ModelConfig config;
    config.layers = layers;
    try {
      const ModelPlan plan(config, sample, 10);
      FAIL() << "expected an error";
    } catch (const Error& error) {
      EXPECT_EQ(error.exit_status(), 2);
      for (const std::string& fragment : fragments)
        EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
    }
  };
  const std::vector<config::LayerSpec> tail = {layer("flatten"), layer("linear", 10)};
  const auto with_tail = [&](config::LayerSpec conv) {
    std::vector<config::LayerSpec> layers{std::move(conv)};
    layers.insert(layers.end(), tail.begin(), tail.end());
    return layers;
  };
  expect_error(with_tail(grouped_conv(6, 3, 1, 1, 4, 1)), Shape{6, 6, 6},
               {"conv1", "groups 4 must divide both its 6 input channels"});
  expect_error(with_tail(grouped_conv(6, 3, 1, 1, 4, 1)), Shape{6, 6, 8}, {"conv1", "6 out_channels"});
  expect_error(with_tail(grouped_conv(4, 3, 1, 0, 1, 3)), Shape{6, 6, 2},
               {"conv1", "dilation 3 spans 7x7", "6x6 input with padding 0"});
  expect_error(with_tail(grouped_conv(4, 3, 1, 0, 1, 1 << 30)), Shape{6, 6, 2}, {"conv1", "dilation"});
  expect_error(with_tail(grouped_conv(4, 3, 1, 1, 0, 1)), Shape{6, 6, 2}, {"groups must be >= 1"});
  expect_error(with_tail(grouped_conv(4, 3, 1, 1, 1, 0)), Shape{6, 6, 2}, {"dilation must be >= 1"});
  // A kernel one wider than the padded input used to round up to one output row at stride 2.
  expect_error(with_tail(grouped_conv(4, 4, 2, 0, 1, 1)), Shape{3, 3, 2}, {"conv1", "does not fit"});
  // Strides and paddings of any int size: refused by name, before an int overflows or the CPU
  // library is handed a stride past the input (it crashed on one of 10^6).
  expect_error(with_tail(grouped_conv(8, 3, 1000000, 0, 1, 1)), Shape{28, 28, 1},
               {"conv1", "stride 1000000 is larger than its 28x28 input", "a stride of 28"});
  expect_error(with_tail(grouped_conv(8, 3, 2147483647, 0, 1, 1)), Shape{28, 28, 1}, {"conv1", "stride"});
  expect_error(with_tail(grouped_conv(8, 3, 1, 100000, 1, 1)), Shape{28, 28, 1},
               {"conv1", "200026x200026x8 per sample", "2^31 - 1"});
  expect_error(with_tail(grouped_conv(8, 3, 1, 2147483647, 1, 1)), Shape{28, 28, 1},
               {"conv1", "2^31 - 1 a side"});
  // Output sides of 2^32 (padding 2^31 - 13 on 28), whose product wrapped to 0 in 64 bits and
  // passed a check of the product alone: the padded side alone is past an int.
  expect_error(with_tail(grouped_conv(1 << 16, 3, 1, 2147483635, 1, 1)), Shape{28, 28, 1},
               {"conv1", "2^31 - 1 a side"});
  // Each side fits an int, their product does not.
  expect_error(with_tail(grouped_conv(8, 3, 1, 40000, 1, 1)), Shape{28, 28, 1}, {"conv1", "80026x80026x8"});
  // A stride of the whole padded input is the largest that means something, and is taken.
  config::ModelConfig widest;
  widest.layers = with_tail(grouped_conv(4, 3, 28, 0, 1, 1));
  EXPECT_EQ(ModelPlan(widest, Shape{28, 28, 1}, 10).size().parameters, 4 * 9 + 4 + 4 * 10 + 10);
  // Pools: a window wholly in the padding (PyTorch's rule: padding at most half the window), and
  // the same stride bound.
  config::LayerSpec padded_pool = layer("max_pool");
  padded_pool.kernel = 2;
  padded_pool.padding = 2;
  expect_error({padded_pool, layer("flatten"), layer("linear", 10)}, Shape{8, 8, 2},
               {"padding 2 is more than half its 2x2 window"});
  config::LayerSpec far_pool = layer("avg_pool");
  far_pool.kernel = 2;
  far_pool.stride = 1 << 30;
  expect_error({far_pool, layer("flatten"), layer("linear", 10)}, Shape{8, 8, 2}, {"stride"});
  // Fits exactly: dilation 3 spans 7, padded 5 + 2 * 1.
  config::ModelConfig fits;
  fits.layers = with_tail(grouped_conv(4, 3, 1, 1, 2, 3));
  const ModelPlan plan(fits, Shape{5, 5, 2}, 10);
  EXPECT_EQ(plan.size().parameters, 4 * 1 * 9 + 4 + 4 * 10 + 10);
}

TEST(ModelInit, SameSeedSameWeightsOtherSeedOtherWeights) {
  auto backend = backend::make_cpu_backend(1);
  config::ModelConfig config;
  config.preset = "lenet5";
  Model first(config, Shape{28, 28, 1}, 10, *backend, 1), second(config, Shape{28, 28, 1}, 10, *backend, 1),
      third(config, Shape{28, 28, 1}, 10, *backend, 2);
  const auto count = first.registry().parameter_count();
  EXPECT_EQ(
      0, std::memcmp(first.registry().parameters().data(), second.registry().parameters().data(), count * 4));
  EXPECT_NE(
      0, std::memcmp(first.registry().parameters().data(), third.registry().parameters().data(), count * 4));
}

// The two phases share one walk of the layers: the model takes the plan's configured network
// over (the same object, its activation sizes already known) and allocates what the plan
// declared, with the weights the one-step constructor gives.
TEST(ModelPlan, TheModelTakesThePlannedLayersOverAndAllocatesThem) {
  auto backend = backend::make_cpu_backend(1);
  config::ModelConfig config;
  config.preset = "resnet20";
  ModelPlan plan(config, Shape{32, 32, 3}, 10);
  const Sequential* planned = &plan.network();
  const std::int64_t activation_elements = plan.network().sample_activation_elements();
  const ModelSize size = plan.size();
  EXPECT_FALSE(plan.registry().allocated());
  Model model(std::move(plan), *backend, 3);
  EXPECT_TRUE(model.registry().allocated());
  EXPECT_EQ(&model.network(), planned);
  EXPECT_EQ(model.network().sample_activation_elements(), activation_elements);
  EXPECT_EQ(model.size().parameters, size.parameters);
  EXPECT_EQ(model.registry().parameter_count(), size.parameter_elements);
  EXPECT_EQ(model.registry().parameters().elements(), size.parameter_elements);
  EXPECT_EQ(model.registry().buffer_count(), size.buffer_elements);

  Model direct(config, Shape{32, 32, 3}, 10, *backend, 3);
  ASSERT_EQ(direct.registry().parameter_count(), size.parameter_elements);
  EXPECT_EQ(0, std::memcmp(direct.registry().parameters().data(), model.registry().parameters().data(),
                           static_cast<std::size_t>(size.parameter_elements) * sizeof(float)));
  EXPECT_EQ(direct.summary(), model.summary());
}

TEST(ModelPlan, AModelThatDoesNotFitTheDataFailsInThePlan) {
  config::ModelConfig config;
  config.layers = {layer("flatten"), layer("linear", 7)};
  try {
    const ModelPlan plan(config, Shape{4, 4, 1}, 10);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("10 classes"), std::string::npos) << error.what();
  }
}

// The memory check's count of activation floats per sample: every layer output once (a conv and
// the relu fused into it share one buffer), two gradient buffers of the largest, and a residual
// block's own four buffers besides its paths'.
TEST(ModelActivations, SampleActivationElementsCountsTheBuffersOfAStep) {
  auto backend = backend::make_cpu_backend(1);
  config::ModelConfig plain;
  plain.layers = {layer("conv", 2, 3, 1, 1), layer("relu"), layer("flatten"), layer("linear", 3)};
  const Model flat(plain, Shape{8, 8, 1}, 3, *backend, 0);
  // relu (the conv's buffer) 128, flatten 128, linear 3, gradients 2 x 128.
  EXPECT_EQ(flat.network().sample_activation_elements(), 128 + 128 + 3 + 2 * 128);

  config::ModelConfig residual;
  config::LayerSpec block = layer("residual");
  block.main = {layer("conv", 2, 3, 1, 1), layer("relu"), layer("conv", 2, 3, 1, 1)};
  residual.layers = {layer("conv", 2, 3, 1, 1), block, layer("flatten"), layer("linear", 3)};
  const Model nested(residual, Shape{8, 8, 1}, 3, *backend, 0);
  // Inside the block: 128 + 128 and 2 x 128 of gradients; the block's own four buffers 4 x 128.
  const std::int64_t block_elements = (128 + 128 + 2 * 128) + 4 * 128;
  // Outside: conv 128 (no relu after it), the block's output 128, flatten 128, linear 3, 2 x 128.
  EXPECT_EQ(nested.network().sample_activation_elements(), 128 + 128 + block_elements + 128 + 3 + 2 * 128);
}

}  // namespace
}  // namespace phalanx::nn
