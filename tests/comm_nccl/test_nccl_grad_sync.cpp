// NcclGradSync in a one-rank world: over several buckets, launched during a simulated backward and
// at wait(), the summed gradients equal the input, the host wait is reported, and the CUDA-event
// measurements of exposed and total communication time are non-negative; begin_step leaves the
// previous step's all-reduce queued (its wait lags a step); a one-rank world that skips its sum
// launches nothing.
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
                          comm::WireType::Float32, true, comm::OneRankSum::ThroughNccl);
  // 16 KiB, then 256 KiB pieces of a 1.2 MB buffer.
  EXPECT_EQ(sync.bucket_count(), 6u);
  comm::CommunicationSeconds last_step;
  for (int step = 0; step < 3; ++step) {
    sync.begin_step();
    // Backward finishes the buffer from its end, in layers of 70000 gradients; in the last step
    // nothing is reported during backward, so wait() launches every bucket.
    if (step < 2)
      for (std::int64_t offset = elements; offset > 0; offset -= 70000)
        sync.gradients_ready(std::max<std::int64_t>(0, offset - 70000));
    const double waited = sync.wait();
    EXPECT_GE(waited, 0.0);
    sync.wait_current();
    const comm::CommunicationSeconds current = sync.read_current();
    EXPECT_GE(current.exposed, 0.0);
    EXPECT_GE(current.total, current.exposed - 1e-3);
    // The step before stays readable after this step reused the other slot (the trainer reads it a
    // step late): its events give exactly what they gave when it was the current step.
    const comm::CommunicationSeconds previous = sync.read_previous();
    EXPECT_EQ(previous.total, last_step.total) << "step " << step;
    EXPECT_EQ(previous.exposed, last_step.exposed) << "step " << step;
    last_step = current;
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
                          comm::WireType::BFloat16, false, comm::OneRankSum::ThroughNccl);
  sync.begin_step();
  sync.gradients_ready(25000);
  EXPECT_GE(sync.wait(), 0.0);
  // A single rank's sum is its own gradient: kept exact, not rounded to bf16.
  EXPECT_EQ(download_floats(*cuda, gradients), input);
  EXPECT_THROW(sync.read_current(), Error);
  sync.begin_step();
}

// About `milliseconds` of GEMMs queued on the backend's compute stream (fp32 2048^3, about 17 GFLOP
// each): work that the all-reduce queued after it cannot overtake.
void queue_device_work(backend::Backend& cuda, Tensor& a, Tensor& b, Tensor& c, int gemms) {
  backend::LinearGeometry geometry;
  geometry.batch = geometry.in_features = geometry.out_features = 2048;
  for (int index = 0; index < gemms; ++index)
    cuda.linear_forward(geometry, a.data(), b.data(), nullptr, c.data());
}

// The lag: step 2's begin_step returns while step 1's all-reduce still waits behind a long queue of
// compute (the old begin_step waited for it, draining the device's queue); step 3's begin_step
// waits for step 1's, which has finished by then or is waited for, and the sums stay exact.
TEST(NcclGradSyncCuda, BeginStepLeavesThePreviousStepsAllReduceQueued) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  comm::NcclCommunicator communicator(mpi_world(), *cuda, 60);
  const std::int64_t elements = 100000;
  const std::vector<float> input = random_floats(elements, 5);
  Tensor gradients = upload_floats(*cuda, input);
  Tensor a = upload_floats(*cuda, random_floats(2048 * 2048, 6)),
         b = upload_floats(*cuda, random_floats(2048 * 2048, 7));
  Tensor c = upload_floats(*cuda, std::vector<float>(2048 * 2048, 0.0f));
  comm::NcclGradSync sync(communicator, gradients.data_as<float>(), elements, 128 * 1024, 16 * 1024,
                          comm::WireType::Float32, true, comm::OneRankSum::ThroughNccl);
  queue_device_work(*cuda, a, b, c, 1);  // cuBLAS chooses its plan outside the measurement
  cuda->synchronize();
  for (int step = 1; step <= 3; ++step) {
    sync.begin_step();
    if (step == 2) {
      EXPECT_TRUE(backend::cuda_work_pending(*cuda))
          << "begin_step waited for the previous step's all-reduce (and so for all compute before it)";
    }
    queue_device_work(*cuda, a, b, c, 40);  // "backward": tens of milliseconds on any GPU
    sync.gradients_ready(0);
    sync.wait();
  }
  const comm::CommunicationSeconds previous = sync.read_previous();
  const comm::CommunicationSeconds current = sync.read_current();
  EXPECT_GE(previous.total, 0.0);
  EXPECT_GE(current.total, 0.0);
  EXPECT_EQ(download_floats(*cuda, gradients), input);
}

// One rank with OneRankSum::Skip (what training uses): no NCCL call, no event, nothing queued; the
// gradients are the sum already and the measurements read zero.
TEST(NcclGradSyncCuda, OneRankThatSkipsItsSumQueuesNothing) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  comm::NcclCommunicator communicator(mpi_world(), *cuda, 60);
  const std::vector<float> input = random_floats(70000, 11);
  Tensor gradients = upload_floats(*cuda, input);
  comm::NcclGradSync sync(communicator, gradients.data_as<float>(), 70000, 64 * 1024, 8 * 1024,
                          comm::WireType::BFloat16, true);
  cuda->synchronize();
  for (int step = 0; step < 3; ++step) {
    sync.begin_step();
    sync.gradients_ready(35000);
    EXPECT_GE(sync.wait(), 0.0);
    sync.wait_current();
    EXPECT_FALSE(backend::cuda_work_pending(*cuda)) << "a skipped sum queued work";
    EXPECT_EQ(sync.read_current().total, 0.0);
    EXPECT_EQ(sync.read_previous().exposed, 0.0);
  }
  EXPECT_EQ(download_floats(*cuda, gradients), input);
}

}  // namespace
}  // namespace phalanx::testing
