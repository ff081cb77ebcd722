// Device discovery of the CUDA backend. These tests run everywhere: without a GPU the CUDA runtime
// answers with an error, which must read as zero devices, and asking for a device must then fail
// with a phalanx::Error, never a crash.
#include <gtest/gtest.h>

#include <string>

#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::testing {
namespace {

TEST(CudaDevice, CountIsNeverNegativeAndStable) {
  const int count = backend::cuda_device_count();
  EXPECT_GE(count, 0);
  // The runtime's error on a machine without a GPU must not linger and change a second answer.
  EXPECT_EQ(backend::cuda_device_count(), count);
}

TEST(CudaDevice, MissingDeviceThrowsPhalanxError) {
  const int count = backend::cuda_device_count();
  // Device `count` never exists: 0 on a machine without a GPU, one past the last otherwise.
  EXPECT_THROW(backend::make_cuda_backend(count), Error);
  EXPECT_THROW(backend::make_cuda_backend(-1), Error);
}

TEST(CudaDevice, StreamOfCpuBackendThrows) {
  const auto cpu = backend::make_cpu_backend(1);
  EXPECT_THROW(backend::cuda_stream(*cpu), Error);
}

TEST(CudaDevice, BackendNamesItsDevice) {
  if (backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: cuda_device_count() is 0";
  const auto cuda = backend::make_cuda_backend(0);
  EXPECT_EQ(cuda->device_kind(), DeviceKind::Cuda);
  EXPECT_EQ(cuda->name().rfind("cuda:0 (", 0), 0u) << cuda->name();
  EXPECT_NE(cuda->name().find("cuDNN 9."), std::string::npos) << cuda->name();
  EXPECT_NE(backend::cuda_stream(*cuda), nullptr);
  EXPECT_EQ(backend::cuda_device(*cuda), 0);
  cuda->synchronize();
}

}  // namespace
}  // namespace phalanx::testing
