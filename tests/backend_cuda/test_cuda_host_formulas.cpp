// The arithmetic the CUDA kernels share with the host (src/backend/cuda/*.hpp compiled for both),
// checked here on the host, so these run on every machine that builds the CUDA backend, GPU or
// not: dropout thresholds against the uniform rule (the Philox words are core's own generator,
// tests/core/test_philox.cpp), the pooling window ranges against a brute-force scan, and the
// optimizer updates bit for bit against the CPU backend's steps (a GPU rank and a CPU rank of one
// job must step the same parameters to the same bits).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/backend_test_support.hpp"
#include "dropout_threshold.hpp"
#include "optimizer_formulas.hpp"
#include "pooling_windows.hpp"

namespace phalanx::testing {
namespace {

using backend::AdamWHyperparameters;
using backend::SgdHyperparameters;

// Keep iff uniform >= p, uniform = (word >> 8) / 2^24: the threshold is the smallest 24-bit value
// whose uniform reaches p.
TEST(CudaHostFormulas, DropoutThresholdIsTheUniformRule) {
  for (const float probability : {0.0f, 1e-8f, 0.1f, 0.25f, 0.3f, 0.5f, 0.9f, 0.99999994f}) {
    const std::uint32_t threshold = backend::cuda::dropout_keep_threshold(probability);
    const auto uniform = [](std::uint32_t top_bits) { return static_cast<float>(top_bits) / 16777216.0f; };
    EXPECT_GE(uniform(threshold), probability) << probability;
    if (threshold > 0) {
      EXPECT_LT(uniform(threshold - 1), probability) << probability;
    }
  }
  EXPECT_EQ(backend::cuda::dropout_keep_threshold(1.0f), 1u << 24);  // nothing kept
  EXPECT_EQ(backend::cuda::dropout_keep_threshold(0.0f), 0u);        // everything kept
}

// Every (kernel, stride, padding) a network uses and more, on small and odd sizes: the outputs
// covering each input position are exactly those whose window contains it.
TEST(CudaHostFormulas, PoolingCoveringOutputsMatchWindows) {
  for (int kernel = 1; kernel <= 7; ++kernel)
    for (int stride = 1; stride <= 4; ++stride)
      for (int padding = 0; padding <= kernel / 2; ++padding)
        for (int size = kernel; size <= 17; ++size) {
          const int out_size = (size + 2 * padding - kernel) / stride + 1;
          for (int position = 0; position < size; ++position) {
            int first = 0, last = 0;
            backend::cuda::covering_outputs(position, padding, kernel, stride, out_size, first, last);
            for (int out = 0; out < out_size; ++out) {
              const int start = backend::cuda::window_start(out, stride, padding);
              const bool covers = position >= start && position < start + kernel;
              ASSERT_EQ(covers, out >= first && out <= last)
                  << "kernel " << kernel << " stride " << stride << " padding " << padding << " size " << size
                  << " position " << position << " output " << out;
            }
          }
        }
}

// Several steps with fresh gradients, so the state (momentum, moments) feeds back; values around
// zero and a few large ones, where rounding differences would show first.
std::vector<float> optimizer_values(std::size_t count, std::uint64_t stream) {
  std::vector<float> values = random_values(count, stream, -2.0f, 2.0f);
  for (std::size_t i = 0; i < count; i += 97) values[i] *= 1000.0f;
  return values;
}

constexpr std::size_t optimizer_count = 4099;
constexpr int optimizer_steps = 6;

void expect_same_bits(const std::vector<float>& actual, const std::vector<float>& expected,
                      const char* what) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i)
    ASSERT_EQ(std::memcmp(&actual[i], &expected[i], sizeof(float)), 0)
        << what << " differs at " << i << ": " << actual[i] << " vs the CPU backend's " << expected[i];
}

TEST(CudaHostFormulas, SgdUpdateIsTheCpuBackendStepBitForBit) {
  auto cpu = backend::make_cpu_backend(1);
  struct Variant {
    float momentum, weight_decay;
    bool nesterov;
  };
  for (const Variant variant : {Variant{0.0f, 0.0f, false}, Variant{0.0f, 5e-4f, false},
                                Variant{0.9f, 5e-4f, false}, Variant{0.9f, 1e-4f, true}}) {
    SCOPED_TRACE(::testing::Message() << "momentum " << variant.momentum << " weight decay "
                                      << variant.weight_decay << " nesterov " << variant.nesterov);
    SgdHyperparameters hyperparameters;
    hyperparameters.learning_rate = 0.05f;
    hyperparameters.momentum = variant.momentum;
    hyperparameters.weight_decay = variant.weight_decay;
    hyperparameters.nesterov = variant.nesterov;
    std::vector<float> cpu_parameters = optimizer_values(optimizer_count, 1);
    std::vector<float> cpu_buffer(optimizer_count, 0.0f);
    std::vector<float> parameters = cpu_parameters, buffer = cpu_buffer;
    const backend::cuda::SgdVariant kind = backend::cuda::sgd_variant(hyperparameters);
    for (int step = 0; step < optimizer_steps; ++step) {
      const std::vector<float> gradients = optimizer_values(optimizer_count, 10 + step);
      cpu->sgd_step(static_cast<std::int64_t>(optimizer_count), hyperparameters, cpu_parameters.data(),
                    gradients.data(), variant.momentum == 0.0f ? nullptr : cpu_buffer.data());
      for (std::size_t i = 0; i < optimizer_count; ++i)
        backend::cuda::sgd_update(kind, hyperparameters.learning_rate, hyperparameters.momentum,
                                  hyperparameters.weight_decay, parameters[i], gradients[i], buffer[i]);
    }
    expect_same_bits(parameters, cpu_parameters, "parameter");
    if (variant.momentum != 0.0f) {
      expect_same_bits(buffer, cpu_buffer, "momentum buffer");
    }
  }
}

TEST(CudaHostFormulas, AdamWUpdateIsTheCpuBackendStepBitForBit) {
  auto cpu = backend::make_cpu_backend(1);
  for (const float weight_decay : {0.0f, 0.01f}) {
    SCOPED_TRACE(::testing::Message() << "weight decay " << weight_decay);
    AdamWHyperparameters hyperparameters;
    hyperparameters.learning_rate = 3e-3f;
    hyperparameters.weight_decay = weight_decay;
    std::vector<float> cpu_parameters = optimizer_values(optimizer_count, 2);
    std::vector<float> cpu_first(optimizer_count, 0.0f), cpu_second(optimizer_count, 0.0f);
    std::vector<float> parameters = cpu_parameters, first = cpu_first, second = cpu_second;
    // Early steps (large bias corrections) and a late one (corrections near 1).
    for (const std::int64_t step : {1, 2, 3, 4, 5, 10000}) {
      hyperparameters.step = step;
      const std::vector<float> gradients = optimizer_values(optimizer_count, 20 + step);
      cpu->adamw_step(static_cast<std::int64_t>(optimizer_count), hyperparameters, cpu_parameters.data(),
                      gradients.data(), cpu_first.data(), cpu_second.data());
      const backend::cuda::AdamWScalars scalars = backend::cuda::adamw_scalars(hyperparameters);
      for (std::size_t i = 0; i < optimizer_count; ++i)
        backend::cuda::adamw_update(scalars, parameters[i], gradients[i], first[i], second[i]);
    }
    expect_same_bits(parameters, cpu_parameters, "parameter");
    expect_same_bits(first, cpu_first, "first moment");
    expect_same_bits(second, cpu_second, "second moment");
  }
}

// Moments and momentum buffers that decay into the subnormal range (zero gradients, as a dead
// unit's) are flushed to zero by both backends at the same step.
TEST(CudaHostFormulas, FlushedMomentsAreTheCpuBackendsBitForBit) {
  auto cpu = backend::make_cpu_backend(1);
  std::vector<float> gradients = optimizer_values(optimizer_count, 30);
  for (std::size_t i = 0; i < optimizer_count; i += 2) gradients[i] = 0.0f;  // half the units dead
  std::vector<float> cpu_parameters = optimizer_values(optimizer_count, 3);
  std::vector<float> cpu_first(optimizer_count, 1e-36f), cpu_second(optimizer_count, 1e-36f);
  std::vector<float> cpu_buffer(optimizer_count, -1e-36f);
  std::vector<float> sgd_parameters = cpu_parameters;
  std::vector<float> parameters = cpu_parameters, first = cpu_first, second = cpu_second;
  std::vector<float> device_sgd_parameters = cpu_parameters, buffer = cpu_buffer;
  AdamWHyperparameters adamw;
  adamw.learning_rate = 1e-3f;
  SgdHyperparameters sgd{0.05f, 0.9f, 0.0f, true};
  const backend::cuda::SgdVariant kind = backend::cuda::sgd_variant(sgd);
  for (std::int64_t step = 1; step <= 60; ++step) {
    adamw.step = step;
    cpu->adamw_step(static_cast<std::int64_t>(optimizer_count), adamw, cpu_parameters.data(),
                    gradients.data(), cpu_first.data(), cpu_second.data());
    cpu->sgd_step(static_cast<std::int64_t>(optimizer_count), sgd, sgd_parameters.data(), gradients.data(),
                  cpu_buffer.data());
    const backend::cuda::AdamWScalars scalars = backend::cuda::adamw_scalars(adamw);
    for (std::size_t i = 0; i < optimizer_count; ++i) {
      backend::cuda::adamw_update(scalars, parameters[i], gradients[i], first[i], second[i]);
      backend::cuda::sgd_update(kind, sgd.learning_rate, sgd.momentum, sgd.weight_decay,
                                device_sgd_parameters[i], gradients[i], buffer[i]);
    }
  }
  // After 60 steps the dead units' first moments (1e-36 x 0.9^60) would be subnormal: both flushed.
  EXPECT_EQ(cpu_first[0], 0.0f);
  EXPECT_EQ(cpu_buffer[0], 0.0f);
  expect_same_bits(parameters, cpu_parameters, "AdamW parameter");
  expect_same_bits(first, cpu_first, "first moment");
  expect_same_bits(second, cpu_second, "second moment");
  expect_same_bits(device_sgd_parameters, sgd_parameters, "SGD parameter");
  expect_same_bits(buffer, cpu_buffer, "momentum buffer");
}

}  // namespace
}  // namespace phalanx::testing
