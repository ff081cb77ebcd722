// The CUDA backend's moving_average (train.ema's update) against the CPU backend's on the same
// values: the same bits, as both compute fma(decay, average, (1 - decay) * source); sizes below one block,
// across blocks and past the grid's cap (grid-stride loop), and a count of zero touching nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "backend_cuda/cuda_test_support.hpp"

namespace phalanx::testing {
namespace {

TEST(CudaMovingAverage, MatchesTheCpuBackendBitwise) {
  PHALANX_SKIP_WITHOUT_CUDA();
  backend::Backend& cuda = cuda_backend();
  std::mt19937 generator(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const std::int64_t count :
       {std::int64_t{1}, std::int64_t{255}, std::int64_t{100003}, std::int64_t{8192} * 256 * 3 + 17}) {
    std::vector<float> source(static_cast<std::size_t>(count)), average(source.size());
    for (float& value : source) value = normal(generator);
    for (float& value : average) value = normal(generator);
    for (const float decay : {0.1f, 0.9990000128746033f}) {
      const Tensor device_source = upload(cuda, source);
      Tensor device_average = upload(cuda, average);
      cuda.moving_average(count, decay, device_source.data(), device_average.data());
      std::vector<float> expected = average;
      cpu_backend().moving_average(count, decay, source.data(), expected.data());
      std::vector<float> got(expected.size());
      cuda.copy_to_host(got.data(), device_average.data(), got.size() * sizeof(float));
      std::int64_t differing = 0;
      for (std::size_t index = 0; index < got.size(); ++index) differing += got[index] != expected[index];
      EXPECT_EQ(differing, 0) << count << " elements, decay " << decay;
      EXPECT_NEAR(got[0], decay * average[0] + (1 - decay) * source[0], 1e-6f);
    }
  }
  cuda.moving_average(0, 0.5f, nullptr, nullptr);
}

}  // namespace
}  // namespace phalanx::testing
