// The MPI tests' small data-parallel training (see small_training.hpp).
#include "small_training.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "loop/backend_host_staging.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/grad_sync.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/optim/gradient_clipping.hpp"
#include "phalanx/optim/optimizer.hpp"

namespace phalanx::testing {

data::Split random_split(const std::string& name, std::int64_t count, std::uint32_t generator_seed) {
  data::Split split;
  split.name = name;
  split.count = count;
  split.height = split.width = 8;
  split.channels = 1;
  std::mt19937 generator(generator_seed);
  split.images.resize(static_cast<std::size_t>(count * split.image_bytes()));
  for (auto& pixel : split.images) pixel = static_cast<std::uint8_t>(generator() % 256);
  for (std::int64_t index = 0; index < count; ++index)
    split.labels.push_back(static_cast<int>(generator() % 10));
  return split;
}

config::ModelConfig small_cnn() {
  config::ModelConfig config;
  config::LayerSpec conv, relu, pool, flatten, linear;
  conv.type = "conv";
  conv.out_channels = 4;
  conv.padding = 1;
  relu.type = "relu";
  pool.type = "max_pool";
  pool.kernel = 2;
  pool.stride = 0;
  flatten.type = "flatten";
  linear.type = "linear";
  linear.out_features = 10;
  config.layers = {conv, relu, pool, flatten, linear};
  return config;
}

std::vector<float> train_small_cnn(const comm::Communicator& communicator, const data::Split& split,
                                   const std::vector<int>& local_batches, const SmallTraining& training) {
  auto backend = backend::make_cpu_backend(1);
  nn::Model model(small_cnn(), Shape{8, 8, 1}, 10, *backend, training.seed);
  config::OptimizerConfig optimizer_config;
  optimizer_config.learning_rate = 0.1;
  optimizer_config.momentum = 0.9;
  optimizer_config.weight_decay = 1e-3;
  auto optimizer = optim::make_optimizer(optimizer_config, *backend, model.registry().parameter_count());
  const data::ShardPlan plan(split.count, local_batches, communicator.rank(), training.seed);
  const int local_batch = plan.local_batch();
  float* gradients = model.registry().gradients().data();
  const std::int64_t count = model.registry().parameter_count();
  const std::size_t bucket_bytes = 256 * sizeof(float);  // several all-reduces per step
  auto sync = training.staging == Staging::InPlace
                  ? comm::GradSync(communicator, gradients, count, bucket_bytes)
                  : comm::GradSync(communicator, gradients, count, bucket_bytes,
                                   std::make_unique<train::BackendHostStaging>(*backend));
  const float gradient_scale = training.weighting == Weighting::ShareOfGlobalBatch
                                   ? 1.0f / static_cast<float>(plan.global_batch())
                                   : 1.0f / static_cast<float>(local_batch * communicator.size());
  const float mean = 0.5f, deviation = 0.25f;
  Tensor images(*backend, Shape{local_batch, 8, 8, 1}, DType::UInt8),
      input(*backend, Shape{local_batch, 8, 8, 1});
  Tensor grad_logits(*backend, Shape{local_batch, 10});
  std::vector<std::int32_t> labels(static_cast<std::size_t>(local_batch));
  auto order = plan.epoch_order(0);
  for (int step = 0; step < training.steps; ++step) {
    const auto indices = plan.rank_indices(order, step);
    for (int sample = 0; sample < local_batch; ++sample) {
      std::memcpy(images.data_as<std::uint8_t>() + sample * 64, split.images.data() + indices[sample] * 64,
                  64);
      labels[sample] = split.labels[indices[sample]];
    }
    backend->normalize_images(images.data_as<std::uint8_t>(), local_batch * 64, 1, &mean, &deviation,
                              input.data());
    const Tensor& logits = model.forward(
        input, nn::ForwardContext{nn::Mode::Training, training.seed, step, communicator.rank()});
    backend->softmax_cross_entropy(local_batch, 10, logits.data(), labels.data(), 0.0f, gradient_scale,
                                   grad_logits.data());
    sync.begin_step();
    model.backward(input, grad_logits, [&](std::int64_t offset) { sync.gradients_ready(offset); });
    sync.wait();
    if (training.clip_grad_norm) {
      const double norm = optim::clip_gradient_norm(*backend, model.registry(), *training.clip_grad_norm);
      if (training.gradient_norms) training.gradient_norms->push_back(norm);
    }
    optimizer->step(model.registry(), 0.1, step + 1);
  }
  const float* weights = model.registry().parameters().data();
  return std::vector<float>(weights, weights + count);
}

std::vector<float> initial_small_cnn_weights(std::uint64_t seed) {
  auto backend = backend::make_cpu_backend(1);
  nn::Model model(small_cnn(), Shape{8, 8, 1}, 10, *backend, seed);
  const float* weights = model.registry().parameters().data();
  return std::vector<float>(weights, weights + model.registry().parameter_count());
}

double worst_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t index = 0; index < a.size(); ++index)
    worst =
        std::max(worst, std::fabs(double(a[index]) - b[index]) / std::max(1e-2, std::fabs(double(b[index]))));
  return worst;
}

}  // namespace phalanx::testing
