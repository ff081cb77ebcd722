// NcclCommunicator in a one-rank world: joining needs a CUDA backend (checked everywhere, GPU or
// not), and on a GPU a sum over one rank returns the input, exactly in float and within bf16
// rounding when compressed; split and the bounded wait work on the same device.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "nccl_test_support.hpp"
#include "phalanx/comm/nccl_communicator.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::testing {
namespace {

TEST(NcclCommunicator, CpuBackendIsRejectedWithPhalanxError) {
  // No GPU needed: the backend is checked (and agreed over MPI) before NCCL or CUDA is touched.
  const auto cpu = backend::make_cpu_backend(1);
  try {
    comm::NcclCommunicator communicator(mpi_world(), *cpu);
    FAIL() << "an NCCL communicator was created on a CPU backend";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("rank 0"), std::string::npos) << message;
    EXPECT_NE(message.find("CUDA backend"), std::string::npos) << message;
  }
}

TEST(NcclCommunicatorCuda, OneRankAllReduceEqualsInput) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  comm::NcclCommunicator communicator(mpi_world(), *cuda, 60);
  EXPECT_EQ(communicator.rank(), 0);
  EXPECT_EQ(communicator.size(), 1);
  EXPECT_EQ(communicator.device(), 0);
  EXPECT_NE(communicator.communication_stream(), communicator.compute_stream());
  for (const std::int64_t count : {1, 1000, 262147}) {
    const std::vector<float> input = random_floats(count, static_cast<unsigned>(count));
    Tensor buffer = upload_floats(*cuda, input);
    communicator.allreduce_sum(buffer.data_as<float>(), count);
    communicator.wait(60);
    EXPECT_EQ(download_floats(*cuda, buffer), input) << count << " floats";
  }
}

TEST(NcclCommunicatorCuda, BFloat16RoundTripWithinBFloat16Rounding) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  comm::NcclCommunicator communicator(mpi_world(), *cuda, 60);
  const std::int64_t count = 100003;
  const std::vector<float> input = random_floats(count, 7);
  Tensor buffer = upload_floats(*cuda, input);
  // Twice, the second smaller: the staging buffer is reused.
  communicator.allreduce_sum(buffer.data_as<float>(), count, comm::WireType::BFloat16);
  communicator.allreduce_sum(buffer.data_as<float>(), count / 2, comm::WireType::BFloat16);
  communicator.order_compute_after_communication();
  const std::vector<float> output = download_floats(*cuda, buffer);
  ASSERT_EQ(output.size(), input.size());
  bool any_rounded = false;
  for (std::size_t index = 0; index < input.size(); ++index) {
    // bf16 keeps 8 significant bits: round to nearest is off by at most half a unit in the last
    // place, 2^-8 of the value; a second rounding of an already-bf16 value is exact.
    ASSERT_LE(std::fabs(output[index] - input[index]), std::ldexp(std::fabs(input[index]), -8))
        << "index " << index << ": " << input[index] << " -> " << output[index];
    any_rounded = any_rounded || output[index] != input[index];
  }
  EXPECT_TRUE(any_rounded) << "bf16 compression left every value exact: the bucket was not compressed";
}

TEST(NcclCommunicatorCuda, SplitFormsOneRankGroup) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  comm::NcclCommunicator communicator(mpi_world(), *cuda, 60);
  comm::NcclCommunicator group = communicator.split(3, 0);
  EXPECT_EQ(group.rank(), 0);
  EXPECT_EQ(group.size(), 1);
  EXPECT_NE(group.communication_stream(), communicator.communication_stream());
  const std::vector<float> input = random_floats(4096, 11);
  Tensor buffer = upload_floats(*cuda, input);
  group.allreduce_sum(buffer.data_as<float>(), 4096);
  group.wait(60);
  EXPECT_EQ(download_floats(*cuda, buffer), input);
  EXPECT_THROW(communicator.split(-1, 0), Error);
}

TEST(NcclCommunicatorCuda, MovedCommunicatorKeepsWorking) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  comm::NcclCommunicator first(mpi_world(), *cuda, 60);
  comm::NcclCommunicator second = std::move(first);
  const std::vector<float> input = random_floats(512, 5);
  Tensor buffer = upload_floats(*cuda, input);
  second.allreduce_sum(buffer.data_as<float>(), 512);
  second.wait(60);
  EXPECT_EQ(download_floats(*cuda, buffer), input);
}

TEST(NcclCommunicatorCuda, ReleasedWhileAnExceptionUnwindsIsAbortedAndANewOneWorks) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  // This rank fails elsewhere with an all-reduce queued: the communicator must be aborted on the
  // way out (finalizing would wait for peers that may never join), leaving the device usable.
  const auto start = std::chrono::steady_clock::now();
  try {
    comm::NcclCommunicator communicator(mpi_world(), *cuda, 60);
    Tensor buffer = upload_floats(*cuda, random_floats(1 << 20, 3));
    communicator.allreduce_sum(buffer.data_as<float>(), 1 << 20);
    throw std::runtime_error("a failure elsewhere on this rank");
  } catch (const std::runtime_error&) {
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
  comm::NcclCommunicator communicator(mpi_world(), *cuda, 60);
  const std::vector<float> input = random_floats(2048, 13);
  Tensor buffer = upload_floats(*cuda, input);
  communicator.allreduce_sum(buffer.data_as<float>(), 2048);
  communicator.wait(60);
  EXPECT_EQ(download_floats(*cuda, buffer), input);
}

}  // namespace
}  // namespace phalanx::testing
