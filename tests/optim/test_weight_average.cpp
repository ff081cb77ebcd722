// train.ema's average against its formula, computed here in double from the same weights: the
// warm-up decay min(decay, (1 + u) / (10 + u)), updates only every N steps, parameters and
// batch-norm buffers alike, and the exchange with the registry that evaluation uses.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/optim/weight_average.hpp"

namespace phalanx::optim {
namespace {

std::vector<float> read(backend::Backend& backend, const Tensor& tensor, std::int64_t count) {
  std::vector<float> host(static_cast<std::size_t>(count));
  backend.copy_to_host(host.data(), tensor.data(), host.size() * sizeof(float));
  return host;
}

void write(backend::Backend& backend, Tensor& tensor, const std::vector<float>& values) {
  backend.copy_from_host(tensor.data(), values.data(), values.size() * sizeof(float));
}

TEST(WeightAverageDecay, WarmUpFollowsTimmsFormula) {
  config::EmaConfig settings;
  settings.decay = 0.99;
  EXPECT_DOUBLE_EQ(weight_average_decay(settings, 0), 0.1);
  EXPECT_DOUBLE_EQ(weight_average_decay(settings, 1), 2.0 / 11.0);
  EXPECT_DOUBLE_EQ(weight_average_decay(settings, 90), 91.0 / 100.0);
  EXPECT_DOUBLE_EQ(weight_average_decay(settings, 890), 0.99) << "capped by the decay";
  settings.warmup = false;
  EXPECT_DOUBLE_EQ(weight_average_decay(settings, 0), 0.99);
}

// Eleven steps of changing weights and buffers, every_steps 3, warm-up on: the average equals the
// formula applied at steps 3, 6 and 9, from the starting weights.
TEST(WeightAverage, EqualsItsFormulaEveryNStepsWithWarmUp) {
  auto backend = backend::make_cpu_backend(1);
  nn::ParameterRegistry registry;
  registry.declare_parameter("conv/weight", Shape{2, 3}, nn::Initializer::Zeros, 1);
  registry.declare_parameter("conv/bias", Shape{2}, nn::Initializer::Zeros, 1);
  registry.declare_buffer("bn/running_mean", Shape{3}, nn::Initializer::Zeros);
  registry.allocate(*backend, 0);
  const std::int64_t parameters = registry.parameter_count(), buffers = registry.buffer_count();
  const auto weights_at = [](std::int64_t step, std::int64_t count, double offset) {
    std::vector<float> values(static_cast<std::size_t>(count));
    for (std::size_t index = 0; index < values.size(); ++index)
      values[index] = static_cast<float>(std::sin(0.7 * static_cast<double>(step) + offset + 0.3 * index));
    return values;
  };
  write(*backend, registry.parameters(), weights_at(0, parameters, 0.0));
  write(*backend, registry.buffers(), weights_at(0, buffers, 1.0));

  config::EmaConfig settings{.decay = 0.95, .every_steps = 3, .warmup = true};
  WeightAverage average(settings, *backend, registry);
  const std::vector<float> start_parameters = weights_at(0, parameters, 0.0),
                           start_buffers = weights_at(0, buffers, 1.0);
  std::vector<double> expected_parameters(start_parameters.begin(), start_parameters.end());
  std::vector<double> expected_buffers(start_buffers.begin(), start_buffers.end());
  std::int64_t updates = 0;
  for (std::int64_t step = 1; step <= 11; ++step) {
    const auto step_parameters = weights_at(step, parameters, 0.0);
    const auto step_buffers = weights_at(step, buffers, 1.0);
    write(*backend, registry.parameters(), step_parameters);
    write(*backend, registry.buffers(), step_buffers);
    const bool updated = average.after_step(step);
    EXPECT_EQ(updated, step % 3 == 0) << "step " << step;
    if (!updated) continue;
    const double decay = std::min(0.95, (1.0 + updates) / (10.0 + updates));
    ++updates;
    for (std::size_t index = 0; index < expected_parameters.size(); ++index)
      expected_parameters[index] = decay * expected_parameters[index] + (1 - decay) * step_parameters[index];
    for (std::size_t index = 0; index < expected_buffers.size(); ++index)
      expected_buffers[index] = decay * expected_buffers[index] + (1 - decay) * step_buffers[index];
  }
  EXPECT_EQ(average.updates(), 3);
  const auto got_parameters = read(*backend, average.parameters(), parameters);
  const auto got_buffers = read(*backend, average.buffers(), buffers);
  for (std::size_t index = 0; index < got_parameters.size(); ++index)
    EXPECT_NEAR(got_parameters[index], expected_parameters[index], 1e-6) << "parameter " << index;
  for (std::size_t index = 0; index < got_buffers.size(); ++index)
    EXPECT_NEAR(got_buffers[index], expected_buffers[index], 1e-6) << "buffer " << index;

  // The exchange puts the average in the registry and, a second time, everything back.
  const auto live = read(*backend, registry.parameters(), parameters);
  {
    const AverageInModel in_model(average);
    EXPECT_EQ(read(*backend, registry.parameters(), parameters), got_parameters);
    EXPECT_EQ(read(*backend, registry.buffers(), buffers), got_buffers);
  }
  EXPECT_EQ(read(*backend, registry.parameters(), parameters), live);
  EXPECT_EQ(read(*backend, average.parameters(), parameters), got_parameters);
}

TEST(WeightAverage, BackendUpdateIsOneFusedMultiplyAdd) {
  auto backend = backend::make_cpu_backend(2);
  const std::int64_t count = 70001;  // past the parallel threshold
  std::vector<float> source(static_cast<std::size_t>(count)), average(source.size());
  for (std::size_t index = 0; index < source.size(); ++index) {
    source[index] = std::cos(0.001f * static_cast<float>(index));
    average[index] = std::sin(0.002f * static_cast<float>(index));
  }
  Tensor device_source(*backend, Shape{count}), device_average(*backend, Shape{count});
  write(*backend, device_source, source);
  write(*backend, device_average, average);
  const float decay = 0.9f;
  backend->moving_average(count, decay, device_source.data(), device_average.data());
  const auto got = read(*backend, device_average, count);
  for (std::size_t index = 0; index < got.size(); index += 997) {
    const float added = (1.0f - decay) * source[index];
    EXPECT_EQ(got[index], std::fma(decay, average[index], added)) << index;
    EXPECT_NEAR(got[index], 0.9 * average[index] + 0.1 * source[index], 1e-6) << index;
  }
}

}  // namespace
}  // namespace phalanx::optim
