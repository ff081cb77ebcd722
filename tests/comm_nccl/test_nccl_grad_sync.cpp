// NcclGradSync in a one-rank world: over several buckets, launched during a simulated backward and
// at wait(), the summed gradients equal the input, the host wait is reported, and the CUDA-event
// measurements of exposed and total communication time are non-negative.
#include <gtest/gtest.h>

#include <algorithm>

#include "nccl_test_support.hpp"
#include "phalanx/comm/nccl_grad_sync.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::testing {
namespace {

TEST(NcclGradSyncCuda, SeveralBucketsLeaveOneRankGradientsUnchanged) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  comm::NcclCommunicator communicator(mpi_world(), *cuda, 60);
  const std::int64_t elements = 300007;
  const std::vector<float> input = random_floats(elements, 3);
  Tensor gradients = upload_floats(*cuda, input);
  comm::NcclGradSync sync(communicator, gradients.data_as<float>(), elements, 256 * 1024, 16 * 1024,
                          comm::WireType::Float32, true);
  // 16 KiB, then 256 KiB pieces of a 1.2 MB buffer.
  EXPECT_EQ(sync.bucket_count(), 6u);
  for (int step = 0; step < 3; ++step) {
    sync.begin_step();
    // Backward finishes the buffer from its end, in layers of 70000 gradients; in the last step
    // nothing is reported during backward, so wait() launches every bucket.
    if (step < 2)
      for (std::int64_t offset = elements; offset > 0; offset -= 70000)
        sync.gradients_ready(std::max<std::int64_t>(0, offset - 70000));
    const double waited = sync.wait();
    EXPECT_GE(waited, 0.0);
    EXPECT_GE(sync.last_exposed_seconds(), 0.0);
    EXPECT_GE(sync.last_communication_seconds(), sync.last_exposed_seconds() - 1e-3);
    EXPECT_EQ(download_floats(*cuda, gradients), input) << "step " << step;
  }
}

TEST(NcclGradSyncCuda, OneRankSkipsCompressionAndMeasurementNeedsOptIn) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  comm::NcclCommunicator communicator(mpi_world(), *cuda, 60);
  const std::vector<float> input = random_floats(50000, 9);
  Tensor gradients = upload_floats(*cuda, input);
  comm::NcclGradSync sync(communicator, gradients.data_as<float>(), 50000, 64 * 1024, 8 * 1024,
                          comm::WireType::BFloat16);
  sync.begin_step();
  sync.gradients_ready(25000);
  EXPECT_GE(sync.wait(), 0.0);
  // A single rank's sum is its own gradient: kept exact, not rounded to bf16.
  EXPECT_EQ(download_floats(*cuda, gradients), input);
  EXPECT_THROW(sync.last_exposed_seconds(), Error);
  sync.begin_step();
}

}  // namespace
}  // namespace phalanx::testing
