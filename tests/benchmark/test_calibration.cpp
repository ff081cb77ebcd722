// Calibration: the least-squares transport fit recovers a known line and keeps its latency >= 0, and a real model's per-layer
// backward times and bucket ready times are consistent with the whole steps they were scaled to.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "phalanx/backend/backend.hpp"
#include "phalanx/benchmark/allreduce_benchmark.hpp"
#include "phalanx/benchmark/calibration.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/optim/optimizer.hpp"

namespace phalanx::testing {
namespace {

TEST(Calibration, TransportFitRecoversLatencyAndInverseBandwidth) {
  std::vector<benchmark::AllreduceResult> measured;
  for (std::size_t bytes = 4096; bytes <= (std::size_t{1} << 24); bytes *= 2)
    measured.push_back({bytes, 20e-6 + bytes * 1e-10, 0, 0});
  const benchmark::TransportFit fit = benchmark::fit_transport("shared_memory", 2, measured);
  EXPECT_NEAR(fit.latency, 20e-6, 1e-12);
  EXPECT_NEAR(fit.seconds_per_byte, 1e-10, 1e-18);
  EXPECT_THROW(benchmark::fit_transport("x", 2, {measured.front()}), Error);
}

// Points on a line whose intercept is negative (what noise at the small sizes can give): the fit
// keeps the latency at zero and the bandwidth from the points, so a prediction never gets a
// negative time.
TEST(Calibration, TransportFitKeepsTheLatencyAtZeroOrAbove) {
  std::vector<benchmark::AllreduceResult> measured;
  for (std::size_t bytes = std::size_t{1} << 17; bytes <= (std::size_t{1} << 24); bytes *= 2)
    measured.push_back({bytes, bytes * 1e-10 - 5e-6, 0, 0});
  const benchmark::TransportFit fit = benchmark::fit_transport("shared_memory", 2, measured);
  EXPECT_EQ(fit.latency, 0.0);
  EXPECT_GT(fit.seconds_per_byte, 0.8e-10);
  EXPECT_LT(fit.seconds_per_byte, 1.0e-10);
}

TEST(Calibration, LayerBackwardTimesAddUpToThePassAndBucketsBecomeReadyInOrder) {
  config::ModelConfig model_config;
  model_config.preset = "resnet20";
  const auto backend = backend::make_cpu_backend(1);
  nn::Model model(nn::ModelPlan(model_config, Shape{16, 16, 3}, 10), *backend, 1);
  const nn::ModelPlan plan(model_config, Shape{16, 16, 3}, 10);
  const scaling::LayerCosts costs = scaling::layer_costs(plan, "resnet20");
  // Buckets of 64 KiB: several over ResNet-20's 272 474 parameters.
  const auto optimizer = optim::make_optimizer(config::OptimizerConfig{}, *backend, model.registry().parameter_count());
  const benchmark::ModelTimings timings =
      benchmark::time_model(model, costs, 2, 5, 1 << 16, 1 << 14, optimizer.get());
  ASSERT_EQ(timings.layers.size(), costs.layers.size());
  double backward = 0, forward = 0;
  for (const auto& layer : timings.layers) {
    EXPECT_GE(layer.backward, 0.0) << layer.name;
    backward += layer.backward;
    forward += layer.forward;
  }
  EXPECT_GT(timings.backward, 0.0);
  EXPECT_NEAR(forward, timings.forward, 1e-9);
  // The layers are those of one layer pass (the median one), scaled to the whole steps' median.
  EXPECT_NEAR(backward, timings.backward, 1e-9);
  // Whole steps: one per iteration, each forward + backward + update, their medians in between.
  ASSERT_EQ(timings.steps.size(), 5u);
  EXPECT_GT(timings.optimizer, 0.0);
  std::vector<double> steps = timings.steps;
  std::sort(steps.begin(), steps.end());
  const double parts = timings.forward + timings.backward + timings.optimizer;
  EXPECT_GT(steps[2], parts / 2);
  EXPECT_LT(steps[2], parts * 2);
  ASSERT_GT(timings.buckets.size(), 3u);
  EXPECT_EQ(timings.buckets.front().end, costs.gradient_elements);
  EXPECT_EQ(timings.buckets.back().begin, 0);
  for (std::size_t index = 1; index < timings.buckets.size(); ++index)
    EXPECT_GE(timings.buckets[index].ready, timings.buckets[index - 1].ready) << "bucket " << index;
  EXPECT_LE(timings.buckets.back().ready, timings.backward);
  EXPECT_LT(timings.buckets.front().ready, timings.buckets.back().ready);
}

// The doubling stops before it wraps: a --max-bytes of 2^63 looped forever at 0 bytes. Sizes that
// give one point are what a transport fit cannot take (bench calibrate refuses them up front).
TEST(Calibration, DoublingSizesStopBeforeWrapping) {
  const std::vector<std::size_t> sizes = benchmark::doubling_sizes(4096, std::size_t{1} << 63);
  ASSERT_FALSE(sizes.empty());
  EXPECT_EQ(sizes.back(), std::size_t{1} << 63);
  EXPECT_TRUE(std::is_sorted(sizes.begin(), sizes.end()));
  EXPECT_EQ(benchmark::doubling_sizes(4096, SIZE_MAX).back(), std::size_t{1} << 63);
  EXPECT_EQ(benchmark::doubling_sizes(4096, 8000).size(), 1u);
  EXPECT_EQ(benchmark::doubling_sizes(4096, 8192), (std::vector<std::size_t>{4096, 8192}));
}

}  // namespace
}  // namespace phalanx::testing
