// train.freeze on the CUDA backend: a training step of a model with a frozen batch norm (the fixed
// affine map of its running statistics, its backward a 1x1 depthwise convolution's data gradient)
// and a frozen convolution (its data gradient only) gives the CPU backend's logits, trainable
// gradients and batch-norm statistics, and leaves the frozen statistics as they were.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backend_cuda/cuda_test_support.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/nn/model.hpp"

namespace phalanx::testing {
namespace {

constexpr int batch = 6, classes = 3, size = 6, channels = 3;

config::LayerSpec named_layer(const char* type, const char* name, int size_or_features = 0) {
  config::LayerSpec spec;
  spec.type = type;
  spec.name = name;
  spec.padding = 1;
  if (spec.type == "conv") spec.out_channels = size_or_features;
  if (spec.type == "linear") spec.out_features = size_or_features;
  return spec;
}

Outputs frozen_step(backend::Backend& backend) {
  config::ModelConfig config;
  config.layers = {named_layer("conv", "stem", 4),          named_layer("batch_norm", "bn"),
                   named_layer("conv", "frozen_conv", 3),   named_layer("batch_norm", "frozen_bn"),
                   named_layer("global_avg_pool", "pool"),  named_layer("linear", "fc", classes)};
  nn::Model model(config, Shape{size, size, channels}, classes, backend, 7);
  auto& registry = model.registry();
  // Statistics and affine values far from the fresh ones, the same on both backends.
  RandomStream random(20240611, 17);
  std::vector<float> buffers(static_cast<std::size_t>(registry.buffer_count()));
  for (float& value : buffers) value = random.next_uniform(0.1f, 0.5f);
  backend.copy_from_host(registry.buffers().data(), buffers.data(), buffers.size() * sizeof(float));
  EXPECT_EQ(registry.freeze("frozen_bn"), 2);
  EXPECT_EQ(registry.freeze("frozen_conv"), 2);

  RandomStream input_random(20240611, 18);
  std::vector<float> input_values(std::size_t{batch} * size * size * channels);
  for (float& value : input_values) value = input_random.next_uniform(-1.0f, 1.0f);
  Tensor input(backend, Shape{batch, size, size, channels});
  backend.copy_from_host(input.data(), input_values.data(), input_values.size() * sizeof(float));
  const Tensor labels = upload(backend, random_labels(batch, classes, 19));
  const Tensor& logits = model.forward(input, nn::ForwardContext{nn::Mode::Training, 7, 0, 0});
  Tensor grad_logits(backend, Shape{batch, classes});
  backend.softmax_cross_entropy(batch, classes, logits.data(), labels.data_as<std::int32_t>(), 0.0f,
                                1.0f / batch, grad_logits.data());
  model.backward(input, grad_logits, {});

  Outputs outputs{{"logits", as_doubles(download(backend, logits))}};
  const std::vector<float> gradients = download(backend, registry.gradients());
  for (const auto& info : registry.parameters_info()) {
    if (info.frozen) continue;
    outputs.push_back({info.name + " gradient", as_doubles(std::vector<float>(
                                                   gradients.begin() + info.offset,
                                                   gradients.begin() + info.offset + info.count))});
  }
  const std::vector<float> after = download(backend, registry.buffers());
  for (const auto& info : registry.buffers_info()) {
    const std::vector<float> values(after.begin() + info.offset, after.begin() + info.offset + info.count);
    if (info.name.starts_with("frozen_bn/")) {
      EXPECT_EQ(values, std::vector<float>(buffers.begin() + info.offset, buffers.begin() + info.offset + info.count))
          << info.name << " is frozen";
    }
    outputs.push_back({info.name, as_doubles(values)});
  }
  backend.synchronize();
  return outputs;
}

TEST(CudaFrozenLayers, AFrozenStepMatchesTheCpuBackend) {
  PHALANX_SKIP_WITHOUT_CUDA();
  // fp32 both sides; batch norm over six samples amplifies rounding, a layout bug is of order 1.
  expect_parity(OpCase{"frozen batch norm and convolution step", 1e-3, frozen_step});
}

}  // namespace
}  // namespace phalanx::testing
