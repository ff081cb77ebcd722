// The CUDA backend's sum_of_squares (gradient clipping's norm): against the sum in double on the
// host, over sizes below one block, across many blocks and past the grid's cap (grid-stride
// loops); the same answer on every call (a fixed reduction order); an infinity comes back inf.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "backend_cuda/cuda_test_support.hpp"

namespace phalanx::testing {
namespace {

TEST(CudaSumOfSquares, MatchesTheHostSumInDouble) {
  PHALANX_SKIP_WITHOUT_CUDA();
  backend::Backend& cuda = cuda_backend();
  std::mt19937 generator(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const std::int64_t count :
       {std::int64_t{1}, std::int64_t{255}, std::int64_t{100003}, std::int64_t{8192} * 256 * 3 + 17}) {
    std::vector<float> values(static_cast<std::size_t>(count));
    for (float& value : values) value = normal(generator);
    double expected = 0;
    for (const float value : values) expected += static_cast<double>(value) * value;
    const Tensor data = upload(cuda, values);
    const double first = cuda.sum_of_squares(count, data.data());
    EXPECT_NEAR(first, expected, 1e-12 * expected) << count << " elements";
    EXPECT_EQ(cuda.sum_of_squares(count, data.data()), first) << "a second call on the same bits";
    EXPECT_NEAR(cpu_backend().sum_of_squares(count, values.data()), first, 1e-12 * expected);
  }
  EXPECT_EQ(cuda.sum_of_squares(0, nullptr), 0.0);
}

TEST(CudaSumOfSquares, AnInfinityGivesInfinity) {
  PHALANX_SKIP_WITHOUT_CUDA();
  backend::Backend& cuda = cuda_backend();
  std::vector<float> values(4097, 0.5f);
  values[4000] = INFINITY;
  const Tensor data = upload(cuda, values);
  EXPECT_TRUE(std::isinf(cuda.sum_of_squares(static_cast<std::int64_t>(values.size()), data.data())));
}

}  // namespace
}  // namespace phalanx::testing
