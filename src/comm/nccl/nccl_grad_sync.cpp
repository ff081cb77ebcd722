// NcclGradSync: GradSync's bucket plan over device memory. Buckets go to NCCL on the communication
// stream while backward still runs; the optimizer waits for them through an event on the device,
// so the host never blocks on communication within a step.
#include "phalanx/comm/nccl_grad_sync.hpp"

#include <algorithm>
#include <chrono>

#include "../../backend/cuda/cuda_check.hpp"
#include "cuda_events.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::comm {

// Events of one step's measurement: communication_start on the compute stream when the first
// bucket became final, backward_end on the compute stream at wait(), communication_end on the
// communication stream after the last bucket.
struct NcclGradSync::Timing {
  nccl::TimingEvent communication_start;
  nccl::TimingEvent backward_end;
  nccl::TimingEvent communication_end;
  bool started = false;   // communication_start recorded in the current step
  bool recorded = false;  // a waited step's three events are recorded
};

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

NcclGradSync::NcclGradSync(NcclCommunicator& communicator, float* gradients, std::int64_t elements,
                           std::size_t bucket_bytes, std::size_t first_bucket_bytes, WireType wire,
                           bool measure_exposed_time)
    : communicator_(communicator), gradients_(gradients), wire_(wire) {
  PHALANX_CHECK(elements >= 0, "negative gradient count ", elements);
  const auto to_elements = [](std::size_t bytes) {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / sizeof(float)));
  };
  const std::int64_t bucket_elements = to_elements(bucket_bytes);
  const std::int64_t first_elements = std::min(bucket_elements, to_elements(first_bucket_bytes));
  // Cut from the end: backward finishes the last layers first, so their bucket goes first.
  for (std::int64_t end = elements; end > 0;) {
    const std::int64_t size = buckets_.empty() ? first_elements : bucket_elements;
    const std::int64_t begin = std::max<std::int64_t>(0, end - size);
    buckets_.push_back(Bucket{begin, end, false});
    end = begin;
  }
  if (measure_exposed_time) {
    PHALANX_CUDA(cudaSetDevice(communicator_.device()));
    timing_ = std::make_unique<Timing>();
  }
}

NcclGradSync::~NcclGradSync() = default;

void NcclGradSync::begin_step() {
  // The previous step's sums must be done before this step's forward can use the updated
  // weights anyway; waiting here, with NCCL's error state polled, bounds a stuck peer.
  if (step_waited_) communicator_.wait(communicator_.timeout_seconds());
  next_bucket_ = 0;
  step_waited_ = false;
  if (timing_) timing_->started = false;
  for (auto& bucket : buckets_) bucket.launched = false;
}

void NcclGradSync::launch(Bucket& bucket) {
  if (timing_ && !timing_->started) {
    PHALANX_CUDA(cudaSetDevice(communicator_.device()));
    PHALANX_CUDA(cudaEventRecord(timing_->communication_start.get(), communicator_.compute_stream()));
    timing_->started = true;
  }
  bucket.launched = true;
  // A single rank has nothing to compress for: its sum is its own gradient, kept exact.
  const WireType wire = communicator_.size() > 1 ? wire_ : WireType::Float32;
  communicator_.allreduce_sum(gradients_ + bucket.begin, bucket.end - bucket.begin, wire);
}

void NcclGradSync::gradients_ready(std::int64_t first_final_offset) {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].begin >= first_final_offset) {
    launch(buckets_[next_bucket_]);
    ++next_bucket_;
  }
}

double NcclGradSync::wait() {
  const double start = now();
  communicator_.check_async_error("gradient all-reduce");
  PHALANX_CUDA(cudaSetDevice(communicator_.device()));
  if (timing_) PHALANX_CUDA(cudaEventRecord(timing_->backward_end.get(), communicator_.compute_stream()));
  for (; next_bucket_ < buckets_.size(); ++next_bucket_) launch(buckets_[next_bucket_]);
  if (timing_) {
    // A step without gradients starts its (empty) communication where backward ends.
    if (!timing_->started)
      PHALANX_CUDA(cudaEventRecord(timing_->communication_start.get(), communicator_.compute_stream()));
    PHALANX_CUDA(cudaEventRecord(timing_->communication_end.get(), communicator_.communication_stream()));
    timing_->recorded = true;
  }
  communicator_.order_compute_after_communication();
  step_waited_ = true;
  return now() - start;
}

double NcclGradSync::last_exposed_seconds() {
  PHALANX_CHECK(timing_ != nullptr, "NcclGradSync was built without measure_exposed_time");
  if (!timing_->recorded) return 0;
  // Communication first, with NCCL's error state polled; backward_end depends on compute alone.
  communicator_.wait(communicator_.timeout_seconds());
  PHALANX_CUDA(cudaEventSynchronize(timing_->backward_end.get()));
  float milliseconds = 0;
  PHALANX_CUDA(
      cudaEventElapsedTime(&milliseconds, timing_->backward_end.get(), timing_->communication_end.get()));
  return std::max(0.0, static_cast<double>(milliseconds) / 1e3);
}

double NcclGradSync::last_communication_seconds() {
  PHALANX_CHECK(timing_ != nullptr, "NcclGradSync was built without measure_exposed_time");
  if (!timing_->recorded) return 0;
  communicator_.wait(communicator_.timeout_seconds());
  PHALANX_CUDA(cudaEventSynchronize(timing_->communication_start.get()));
  float milliseconds = 0;
  PHALANX_CUDA(cudaEventElapsedTime(&milliseconds, timing_->communication_start.get(),
                                    timing_->communication_end.get()));
  return std::max(0.0, static_cast<double>(milliseconds) / 1e3);
}

}  // namespace phalanx::comm
