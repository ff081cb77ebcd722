// Host-to-device bandwidth, pinned against pageable (see cuda_transfer.hpp). From pinned memory
// the copy engine reads the host buffer directly (DMA); from pageable memory the driver first
// stages it through its own pinned buffer, which costs bandwidth and makes the copy synchronous
// with respect to the host. CUDA events on the copy's stream time the device side of each copy.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "cuda_check.hpp"
#include "cuda_handles.hpp"
#include "device_buffer.hpp"
#include "phalanx/backend/cuda_transfer.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend {
namespace {

constexpr int warmup_copies = 3;

double median_copy_seconds(void* device, const void* host, std::size_t bytes, int iterations,
                           cudaStream_t stream) {
  cuda::TimingEvent start, stop;
  std::vector<double> times;
  for (int iteration = 0; iteration < warmup_copies + iterations; ++iteration) {
    PHALANX_CUDA(cudaEventRecord(start.get(), stream));
    PHALANX_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
    PHALANX_CUDA(cudaEventRecord(stop.get(), stream));
    PHALANX_CUDA(cudaEventSynchronize(stop.get()));
    float milliseconds = 0;
    PHALANX_CUDA(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()));
    if (iteration >= warmup_copies) times.push_back(milliseconds / 1000.0);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

std::vector<TransferResult> measure_host_to_device(int device, const std::vector<std::size_t>& sizes,
                                                   int iterations) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky "no device" status
    throw_input_error("bench transfer: no CUDA device on this machine (it measures host-to-device copies)");
  }
  PHALANX_REQUIRE_INPUT(device >= 0 && device < count, "bench transfer: device ", device, " does not exist (",
                        count, " visible)");
  PHALANX_REQUIRE_INPUT(iterations >= 1, "--iterations must be >= 1 (got ", iterations, ")");
  PHALANX_CUDA(cudaSetDevice(device));
  const std::size_t largest = sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end());
  cuda::PinnedBuffer pinned(largest);
  std::unique_ptr<unsigned char[]> pageable(new unsigned char[largest]);
  std::memset(pinned.data(), 1, largest);
  std::memset(pageable.get(), 1, largest);  // touch every page: no first-touch faults in the timing
  cuda::DeviceBuffer target(largest);
  cuda::Stream stream;
  std::vector<TransferResult> results;
  for (const std::size_t bytes : sizes) {
    TransferResult result;
    result.bytes = bytes;
    result.pinned_seconds =
        median_copy_seconds(target.data(), pinned.data(), bytes, iterations, stream.get());
    result.pageable_seconds =
        median_copy_seconds(target.data(), pageable.get(), bytes, iterations, stream.get());
    result.pinned_bandwidth = result.pinned_seconds > 0 ? bytes / result.pinned_seconds : 0;
    result.pageable_bandwidth = result.pageable_seconds > 0 ? bytes / result.pageable_seconds : 0;
    results.push_back(result);
  }
  return results;
}

}  // namespace phalanx::backend
