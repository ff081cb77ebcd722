// The runtime side of the CUDA backend that the op parity tests do not reach: the copy-stream
// upload's ordering against the compute stream (a staging buffer is never overwritten while a
// queued kernel still reads it), and out-of-memory surfacing as the error kind the automatic batch
// size recovers from, with the backend still usable afterwards.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda_test_support.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::testing {
namespace {

TEST(CudaUpload, NextStartWaitsUntilQueuedComputeHasReadTheBuffer) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  const std::int64_t count = std::int64_t{1} << 20;  // 4 MiB: copied in well under a millisecond
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  Tensor destination(*cuda, Shape{count});
  Tensor observed(*cuda, Shape{count});
  Tensor first(cuda->staging_allocator(), Shape{count});
  Tensor second(cuda->staging_allocator(), Shape{count});
  std::fill(first.data(), first.data() + count, 1.0f);
  std::fill(second.data(), second.data() + count, 2.0f);
  // Busy work queued on the compute stream ahead of the reader: 24 copies of 512 MiB keep it busy
  // for milliseconds, far longer than the second upload needs, so an unordered second upload
  // would land before the reader runs.
  const std::int64_t busy_count = std::int64_t{128} << 20;
  Tensor busy_source(*cuda, Shape{busy_count});
  Tensor busy_destination(*cuda, Shape{busy_count});
  cuda->fill(busy_source.data(), busy_count, 3.0f);

  const auto upload = cuda->make_upload();
  upload->start({{destination.data_as<void>(), first.data_as<void>(), bytes}});
  upload->order_compute_after();
  for (int round = 0; round < 24; ++round)
    cuda->copy(busy_destination.data(), busy_source.data(),
               static_cast<std::size_t>(busy_count) * sizeof(float));
  cuda->copy(observed.data(), destination.data(), bytes);  // the last reader of the first batch
  upload->order_next_start_after_compute();
  upload->start({{destination.data_as<void>(), second.data_as<void>(), bytes}});
  upload->wait_host();
  upload->order_compute_after();
  cuda->synchronize();

  std::vector<float> observed_values(static_cast<std::size_t>(count));
  std::vector<float> destination_values(static_cast<std::size_t>(count));
  cuda->copy_to_host(observed_values.data(), observed.data(), bytes);
  cuda->copy_to_host(destination_values.data(), destination.data(), bytes);
  const auto ones = std::count(observed_values.begin(), observed_values.end(), 1.0f);
  EXPECT_EQ(ones, count) << "the reader saw " << count - ones << " values of the second upload";
  EXPECT_EQ(std::count(destination_values.begin(), destination_values.end(), 2.0f), count);
  const backend::UploadTiming timing = upload->timing();
  EXPECT_EQ(timing.bytes, bytes);
  EXPECT_GT(timing.copy_seconds, 0.0);
  EXPECT_LE(timing.exposed_seconds, timing.copy_seconds);
}

// The upload's events are created when it is made: with another device current on the calling
// thread they would live there, and recording them on the backend's streams would fail.
TEST(CudaUpload, MadeWhileAnotherDeviceIsCurrentUploadsToItsBackend) {
  PHALANX_SKIP_WITHOUT_CUDA();
  if (backend::cuda_device_count() < 2) GTEST_SKIP() << "needs two CUDA devices";
  const auto cuda = backend::make_cuda_backend(1);
  const std::int64_t count = 4096;
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  Tensor destination(*cuda, Shape{count});
  Tensor source(cuda->staging_allocator(), Shape{count});
  std::fill(source.data(), source.data() + count, 5.0f);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const auto upload = cuda->make_upload();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  upload->start({{destination.data_as<void>(), source.data_as<void>(), bytes}});
  upload->wait_host();
  upload->order_compute_after();
  std::vector<float> values(static_cast<std::size_t>(count));
  cuda->copy_to_host(values.data(), destination.data(), bytes);
  EXPECT_EQ(std::count(values.begin(), values.end(), 5.0f), count);
  EXPECT_EQ(upload->timing().bytes, bytes);
}

TEST(CudaDevice, AllocationBeyondMemoryIsADeviceMemoryErrorAndTheBackendRecovers) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  const auto memory = cuda->device_memory();
  ASSERT_TRUE(memory.has_value());
  try {
    (void)cuda->allocate(memory->total_bytes * 2);
    FAIL() << "allocating twice the device's memory succeeded";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::DeviceMemory) << error.what();
  }
  // Out of memory is not sticky: the next allocation and kernel work.
  Tensor values(*cuda, Shape{1024});
  cuda->fill(values.data(), 1024, 5.0f);
  std::vector<float> host(1024);
  cuda->copy_to_host(host.data(), values.data(), host.size() * sizeof(float));
  EXPECT_EQ(std::count(host.begin(), host.end(), 5.0f), 1024);
}

}  // namespace
}  // namespace phalanx::testing
