// The central property of data parallelism (DESIGN §6): N ranks with local batch G/N, their
// gradients summed by GradSync, take the same steps as 1 rank with batch G. Every rank also
// trains the 1-rank reference locally on a communicator of its own, so the comparison needs no
// files; and the distributed run repeated gives bitwise the same weights.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "phalanx/comm/grad_sync.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/optim/optimizer.hpp"

namespace phalanx {
namespace {

constexpr int global_batch = 16;
constexpr int steps = 6;
constexpr std::uint64_t seed = 42;

data::Split make_split() {
  data::Split split;
  split.count = 160;
  split.height = split.width = 8;
  split.channels = 1;
  std::mt19937 generator(5);
  split.images.resize(static_cast<std::size_t>(split.count * 64));
  for (auto& pixel : split.images) pixel = static_cast<std::uint8_t>(generator() % 256);
  for (std::int64_t index = 0; index < split.count; ++index)
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

// Trains `steps` SGD steps over `communicator` with local batch global_batch / size and returns the weights.
std::vector<float> train(const comm::Communicator& communicator, const data::Split& split) {
  auto backend = backend::make_cpu_backend(1);
  nn::Model model(small_cnn(), Shape{8, 8, 1}, 10, *backend, seed);
  config::OptimizerConfig optimizer_config;
  optimizer_config.learning_rate = 0.1;
  optimizer_config.momentum = 0.9;
  optimizer_config.weight_decay = 1e-3;
  auto optimizer = optim::make_optimizer(optimizer_config, *backend, model.registry().parameter_count());
  const int local_batch = global_batch / communicator.size();
  const data::ShardPlan plan(split.count, local_batch, communicator.rank(), communicator.size(), seed);
  comm::GradSync sync(communicator, model.registry().gradients().data(), model.registry().parameter_count(),
                      256 * sizeof(float));  // small buckets: several all-reduces per step
  const float mean = 0.5f, deviation = 0.25f;
  Tensor images(*backend, Shape{local_batch, 8, 8, 1}, DType::UInt8),
      input(*backend, Shape{local_batch, 8, 8, 1});
  Tensor grad_logits(*backend, Shape{local_batch, 10});
  std::vector<std::int32_t> labels(static_cast<std::size_t>(local_batch));
  const auto permutation = plan.permutation(0);
  for (int step = 0; step < steps; ++step) {
    const auto indices = plan.rank_indices(permutation, step);
    for (int sample = 0; sample < local_batch; ++sample) {
      std::memcpy(images.data_as<std::uint8_t>() + sample * 64, split.images.data() + indices[sample] * 64,
                  64);
      labels[sample] = split.labels[indices[sample]];
    }
    backend->normalize_images(images.data_as<std::uint8_t>(), local_batch * 64, 1, &mean, &deviation,
                              input.data());
    const Tensor& logits =
        model.forward(input, nn::ForwardContext{nn::Mode::Training, seed, step, communicator.rank()});
    backend->softmax_cross_entropy(local_batch, 10, logits.data(), labels.data(), 0.0f, 1.0f / global_batch,
                                   grad_logits.data());
    sync.begin_step();
    model.backward(input, grad_logits, [&](std::int64_t offset) { sync.gradients_ready(offset); });
    sync.wait();
    optimizer->step(model.registry(), 0.1, step + 1);
  }
  const float* weights = model.registry().parameters().data();
  return std::vector<float>(weights, weights + model.registry().parameter_count());
}

TEST(DataParallel, NRanksEqualOneRankWithTheGlobalBatch) {
  const auto world = comm::Communicator::world();
  const auto split = make_split();
  const auto distributed = train(world, split);
  const auto alone = world.split(world.rank(), 0);
  const auto reference = train(alone, split);
  ASSERT_EQ(distributed.size(), reference.size());
  // Only the float summation order differs (per-rank partial sums, then the all-reduce): about
  // 1e-7 relative per step, grown by momentum over 6 steps; 1e-5 leaves a wide margin yet
  // catches any real error (a wrong scale or a missing rank's share moves weights by >1e-3).
  double worst = 0;
  for (std::size_t index = 0; index < distributed.size(); ++index)
    worst = std::max(worst, std::fabs(double(distributed[index]) - reference[index]) /
                                std::max(1e-2, std::fabs(double(reference[index]))));
  EXPECT_LT(worst, 1e-5) << "world size " << world.size();
  // The weights moved: the comparison is not between two untouched initialisations.
  auto backend = backend::make_cpu_backend(1);
  nn::Model untouched(small_cnn(), Shape{8, 8, 1}, 10, *backend, seed);
  double moved = 0;
  for (std::size_t index = 0; index < reference.size(); ++index)
    moved = std::max(moved,
                     std::fabs(double(reference[index]) - untouched.registry().parameters().data()[index]));
  EXPECT_GT(moved, 1e-3);
}

TEST(DataParallel, RepeatedRunsAreBitwiseIdentical) {
  const auto world = comm::Communicator::world();
  const auto split = make_split();
  const auto first = train(world, split);
  const auto second = train(world, split);
  ASSERT_EQ(first.size(), second.size());
  EXPECT_EQ(0, std::memcmp(first.data(), second.data(), first.size() * sizeof(float)));
}

}  // namespace
}  // namespace phalanx
