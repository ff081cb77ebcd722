// Activation fusion at the model level: a model built with ActivationFusion::Fused trains bit for
// bit like the same model with ActivationFusion::Separate (logits, loss, every gradient, parameters
// and running statistics after several SGD steps, then evaluation logits), holds one activation
// buffer fewer per fused pair (relu, relu6, sigmoid, hardsigmoid after a conv, linear or
// batch_norm; never silu, hardswish or gelu), and declares the same parameter names (checkpoints do
// not change).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "phalanx/nn/model.hpp"

namespace phalanx::nn {
namespace {

config::LayerSpec layer(const std::string& type, int size = 0) {
  config::LayerSpec spec;
  spec.type = type;
  spec.padding = 1;
  if (type == "conv") spec.out_channels = size;
  if (type == "linear") spec.out_features = size;
  if (type == "max_pool") {
    spec.kernel = 2;
    spec.stride = 0;
    spec.padding = 0;
  }
  return spec;
}

// What one training run leaves behind, copied to the host for bitwise comparison.
struct Trace {
  std::vector<std::vector<float>> logits;  // per step, then the evaluation logits
  std::vector<double> losses;
  std::vector<std::vector<float>> gradients;  // per step
  std::vector<float> parameters, buffers;
  std::vector<std::string> names;
  std::size_t activation_bytes = 0;
  int fused_activations = 0;
};

std::vector<float> to_host(backend::Backend& backend, const Tensor& tensor) {
  std::vector<float> values(static_cast<std::size_t>(tensor.elements()));
  backend.copy_to_host(values.data(), tensor.data(), values.size() * sizeof(float));
  return values;
}

// `steps` SGD steps (momentum, weight decay) on a fixed random batch, then one evaluation forward.
Trace train(const config::ModelConfig& config, const Shape& sample, int classes, ActivationFusion fusion,
            int steps = 3, int batch = 8) {
  auto backend = backend::make_cpu_backend(1);
  Model model(config, sample, classes, *backend, 7, fusion);
  auto& registry = model.registry();
  Trace trace;
  for (const auto& info : registry.parameters_info()) trace.names.push_back(info.name);
  for (const auto& info : registry.buffers_info()) trace.names.push_back(info.name);

  const Shape input_shape{batch, sample[0], sample[1], sample[2]};
  std::mt19937 generator(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> input(static_cast<std::size_t>(input_shape.elements()));
  for (auto& value : input) value = normal(generator);
  std::vector<std::int32_t> labels;
  for (int index = 0; index < batch; ++index) labels.push_back(index % classes);
  Tensor input_tensor(*backend, input_shape);
  backend->copy_from_host(input_tensor.data(), input.data(), input.size() * sizeof(float));

  Tensor momentum(*backend, Shape{registry.parameter_count()});
  backend->fill(momentum.data(), momentum.elements(), 0.0f);
  const backend::SgdHyperparameters sgd{0.05f, 0.9f, 5e-4f, false};
  for (int step = 0; step < steps; ++step) {
    const ForwardContext context{Mode::Training, 11, step, 0};
    const Tensor& logits = model.forward(input_tensor, context);
    trace.logits.push_back(to_host(*backend, logits));
    Tensor grad_logits(*backend, logits.shape());
    const auto totals = backend->softmax_cross_entropy(batch, classes, logits.data(), labels.data(), 0.1f,
                                                       1.0f / batch, grad_logits.data());
    trace.losses.push_back(totals.loss_sum);
    model.backward(input_tensor, grad_logits, {});
    trace.gradients.push_back(to_host(*backend, registry.gradients()));
    backend->sgd_step(registry.parameter_count(), sgd, registry.parameters().data(),
                      registry.gradients().data(), momentum.data());
  }
  const ForwardContext evaluation{Mode::Evaluation, 11, steps, 0};
  trace.logits.push_back(to_host(*backend, model.forward(input_tensor, evaluation)));
  trace.parameters = to_host(*backend, registry.parameters());
  if (registry.buffer_count() > 0) trace.buffers = to_host(*backend, registry.buffers());
  trace.activation_bytes = model.network().activation_bytes();
  trace.fused_activations = model.network().fused_activation_count();
  return trace;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  // An empty vector's data() may be null, and memcmp with a null pointer is undefined even for 0
  // bytes (UBSan stopped here on a model without buffers).
  if (a.size() != b.size()) return false;
  return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void expect_same_training(const Trace& fused, const Trace& separate) {
  EXPECT_EQ(fused.names, separate.names);
  ASSERT_EQ(fused.logits.size(), separate.logits.size());
  for (std::size_t step = 0; step < fused.logits.size(); ++step)
    EXPECT_TRUE(bitwise_equal(fused.logits[step], separate.logits[step])) << "logits of step " << step;
  for (std::size_t step = 0; step < fused.losses.size(); ++step)
    EXPECT_EQ(std::memcmp(&fused.losses[step], &separate.losses[step], sizeof(double)), 0) << "loss " << step;
  for (std::size_t step = 0; step < fused.gradients.size(); ++step)
    EXPECT_TRUE(bitwise_equal(fused.gradients[step], separate.gradients[step])) << "gradients " << step;
  EXPECT_TRUE(bitwise_equal(fused.parameters, separate.parameters));
  EXPECT_TRUE(bitwise_equal(fused.buffers, separate.buffers));
  // Training changed something, so the comparison compared trained values.
  EXPECT_FALSE(bitwise_equal(fused.logits.front(), fused.logits.back()));
}

config::ModelConfig preset(const std::string& name) {
  config::ModelConfig config;
  config.preset = name;
  return config;
}

TEST(ReluFusion, FmnistCnnTrainsBitForBitWithReluAfterEachPoolAndOneBufferLess) {
  const Shape sample{28, 28, 1};
  const Trace fused = train(preset("fmnist_cnn"), sample, 10, ActivationFusion::Fused);
  const Trace separate = train(preset("fmnist_cnn"), sample, 10, ActivationFusion::Separate);
  // The same bits as the layers run as written: relu1 and relu2 after their max pools, not fused
  // into conv1 and conv2, and relu3 fused into fc1.
  expect_same_training(fused, separate);
  EXPECT_EQ(fused.fused_activations, 1);
  EXPECT_EQ(separate.fused_activations, 0);
  // As written, conv1 [28,28,32], relu1 [28,28,32], conv2 [14,14,64], relu2 [14,14,64] and fc1
  // [128] are held; reordered and fused, relu1 [14,14,32] and relu2 [7,7,64] instead, fc1's not.
  const std::size_t saved = sizeof(float) * 8 * (28 * 28 * 32 - 14 * 14 * 32 + 14 * 14 * 64 - 7 * 7 * 64 + 128);
  EXPECT_EQ(separate.activation_bytes - fused.activation_bytes, saved);
}

TEST(ReluFusion, Resnet20OnSmallImagesTrainsBitForBit) {
  // Batch norm + ReLU in the stem and in every block's main path, add + ReLU at every block's end,
  // stride-2 shortcuts; 12x12 keeps it quick.
  const Shape sample{12, 12, 3};
  const Trace fused = train(preset("resnet20"), sample, 10, ActivationFusion::Fused, 2);
  const Trace separate = train(preset("resnet20"), sample, 10, ActivationFusion::Separate, 2);
  expect_same_training(fused, separate);
  EXPECT_EQ(fused.fused_activations, 1);  // the stem's bn1+relu; the blocks' own are in nested Sequentials
  EXPECT_EQ(separate.activation_bytes - fused.activation_bytes, sizeof(float) * 8 * 12 * 12 * 16);
}

TEST(ReluFusion, LayersListWithReluAfterLinearAndAsLastLayer) {
  // conv -> relu -> batch_norm -> relu, a residual whose main path ends in batch_norm, relu after
  // a linear layer, and a relu as the model's last layer (written into the caller's logits).
  config::LayerSpec block = layer("residual");
  block.main = {layer("conv", 8), layer("batch_norm"), layer("relu"), layer("conv", 8), layer("batch_norm")};
  block.relu_after = true;
  config::LayerSpec plain_block = block;
  plain_block.relu_after = false;
  config::ModelConfig config;
  config.layers = {
      layer("conv", 8), layer("relu"),       layer("batch_norm"), layer("relu"),       block,
      plain_block,      layer("max_pool"),   layer("flatten"),    layer("linear", 32), layer("relu"),
      layer("dropout"), layer("linear", 10), layer("relu")};
  const Shape sample{8, 8, 2};
  const Trace fused = train(config, sample, 10, ActivationFusion::Fused);
  const Trace separate = train(config, sample, 10, ActivationFusion::Separate);
  expect_same_training(fused, separate);
  EXPECT_EQ(fused.fused_activations, 4);  // conv, batch_norm, linear 32, and the last linear's
  // Fused, the last linear writes ReLU(result) straight into the caller's logits [10].
  const std::size_t saved = sizeof(float) * 8 * (8 * 8 * 8 + 8 * 8 * 8 + 32 + 10);
  EXPECT_EQ(separate.activation_bytes - fused.activation_bytes, saved);
}

TEST(ReluFusion, ReluWithoutAProducerIsNotFused) {
  // A relu first, after a pool or after another relu runs on its own.
  config::ModelConfig config;
  config.layers = {layer("relu"), layer("conv", 4), layer("max_pool"),  layer("relu"),
                   layer("relu"), layer("flatten"), layer("linear", 10)};
  const Shape sample{8, 8, 1};
  const Trace fused = train(config, sample, 10, ActivationFusion::Fused, 2);
  const Trace separate = train(config, sample, 10, ActivationFusion::Separate, 2);
  expect_same_training(fused, separate);
  EXPECT_EQ(fused.fused_activations, 0);
  EXPECT_EQ(fused.activation_bytes, separate.activation_bytes);
}

TEST(ActivationFusion, MobileNetLikeLayersTrainBitForBitWithOneBufferLessPerFusedPair) {
  // relu6 after a batch_norm, sigmoid after a conv, hardsigmoid after a linear and relu6 as the last
  // layer fuse; hardswish, silu and gelu (their backward reads their input) run on their own.
  config::LayerSpec depthwise = layer("conv", 8);
  depthwise.groups = 8;
  config::ModelConfig config;
  config.layers = {layer("conv", 8),    layer("batch_norm"),  layer("relu6"),      depthwise,
                   layer("batch_norm"), layer("hardswish"),   layer("conv", 8),    layer("sigmoid"),
                   layer("conv", 8),    layer("silu"),        layer("max_pool"),   layer("flatten"),
                   layer("linear", 32), layer("hardsigmoid"), layer("linear", 32), layer("gelu"),
                   layer("linear", 10), layer("relu6")};
  const Shape sample{8, 8, 2};
  const Trace fused = train(config, sample, 10, ActivationFusion::Fused);
  const Trace separate = train(config, sample, 10, ActivationFusion::Separate);
  expect_same_training(fused, separate);
  EXPECT_EQ(fused.fused_activations, 4);
  EXPECT_EQ(separate.fused_activations, 0);
  // Not held when fused: the batch_norm's and the conv's [8, 8, 8], the linear's [32], the logits' [10]
  // (the last linear writes relu6(result) into the caller's logits).
  const std::size_t saved = sizeof(float) * 8 * (8 * 8 * 8 + 8 * 8 * 8 + 32 + 10);
  EXPECT_EQ(separate.activation_bytes - fused.activation_bytes, saved);
}

}  // namespace
}  // namespace phalanx::nn
