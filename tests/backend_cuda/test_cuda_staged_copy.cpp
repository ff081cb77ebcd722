// The CUDA backend's StagedCopy (a gradient bucket's trip through page-locked host memory for an
// MPI all-reduce): the copy to the host is ordered after the kernels queued before it and returns
// while they still run; the host waits only in wait_landed; the copy back is ordered before the
// kernels queued after it, without a host wait.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda_test_support.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::testing {
namespace {

// About 17 GFLOP each (fp32 2048^3): tens of milliseconds of queued device work for 20 of them.
void queue_gemms(backend::Backend& cuda, const Tensor& a, const Tensor& b, Tensor& c, int count) {
  backend::LinearGeometry geometry;
  geometry.batch = geometry.in_features = geometry.out_features = 2048;
  for (int index = 0; index < count; ++index)
    cuda.linear_forward(geometry, a.data(), b.data(), nullptr, c.data());
}

TEST(CudaStagedCopy, RoundTripIsOrderedOnTheDeviceAndTheHostWaitsOnlyForTheLanding) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto owner = backend::make_cuda_backend(0);
  backend::Backend& cuda = *owner;
  const std::int64_t square = 2048 * 2048, count = 300007;
  RandomStream random(17, 1);
  std::vector<float> values(static_cast<std::size_t>(square));
  for (float& value : values) value = random.next_uniform(-1.0f, 1.0f);
  const Tensor a = upload(cuda, values), b = upload(cuda, values);
  Tensor c = empty_floats(cuda, square);
  Tensor block = empty_floats(cuda, count);
  Tensor host(cuda.staging_allocator(), Shape{count});  // page-locked
  const auto copy = cuda.make_staged_copy();
  queue_gemms(cuda, a, b, c, 1);  // cuBLAS settles its plan outside the measurement
  cuda.synchronize();

  const std::int64_t waits_before = backend::cuda_host_waits(cuda);
  queue_gemms(cuda, a, b, c, 20);
  cuda.fill(block.data(), count, 3.0f);  // the bucket becomes final behind the GEMMs
  copy->start_to_host(host.data(), block.data(), count * sizeof(float));
  EXPECT_TRUE(backend::cuda_work_pending(cuda)) << "start_to_host waited for the queued kernels";
  EXPECT_FALSE(copy->landed()) << "the copy landed before the kernels it follows had run";
  copy->wait_landed();
  EXPECT_TRUE(copy->landed());
  for (std::int64_t index = 0; index < count; ++index)
    ASSERT_EQ(host.data()[index], 3.0f)
        << "the copy did not wait for the fill queued before it, at " << index;

  // The sum comes back and the next kernel reads it: ordered on the compute stream.
  for (std::int64_t index = 0; index < count; ++index) host.data()[index] = static_cast<float>(index % 97);
  queue_gemms(cuda, a, b, c, 10);
  copy->start_to_device(block.data(), host.data(), count * sizeof(float));
  cuda.scale(count, 2.0f, block.data());
  EXPECT_TRUE(backend::cuda_work_pending(cuda)) << "start_to_device waited for the device";
  EXPECT_EQ(backend::cuda_host_waits(cuda), waits_before) << "the backend's own waits were used";
  const std::vector<float> back = download(cuda, block);
  for (std::int64_t index = 0; index < count; ++index)
    ASSERT_EQ(back[static_cast<std::size_t>(index)], 2.0f * static_cast<float>(index % 97)) << "at " << index;

  // The next trip reads the block only after the copy back and the kernel after it have run.
  cuda.fill(block.data(), count, -1.0f);
  copy->start_to_host(host.data(), block.data(), count * sizeof(float));
  copy->wait_landed();
  EXPECT_EQ(host.data()[0], -1.0f);
  EXPECT_EQ(host.data()[count - 1], -1.0f);
}

}  // namespace
}  // namespace phalanx::testing
