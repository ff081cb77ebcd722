// NcclGradSync: GradSync's bucket plan over device memory. Buckets go to NCCL on the communication
// stream while backward still runs; the optimizer waits for them through an event on the device,
// and the host's bounded wait for them lags a step behind, so the host never drains the device's
// queue to wait for communication.
#include "phalanx/comm/nccl_grad_sync.hpp"

#include <algorithm>
#include <chrono>

#include "../../backend/cuda/cuda_check.hpp"
#include "cuda_events.hpp"
#include "phalanx/comm/step_ring.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::comm {

// The events of one step. communication_end (on the communication stream, after the step's last
// bucket) is what begin_step two steps later waits for; with measurement, communication_start (on
// the compute stream when the first bucket became final) and backward_end (on the compute stream
// at wait()) time it.
struct NcclGradSync::Step {
  nccl::TimingEvent communication_start;
  nccl::TimingEvent backward_end;
  nccl::TimingEvent communication_end;
  bool started = false;  // communication_start recorded in this step
  bool waited = false;   // wait() ran in this step: its events are recorded
};

// Two slots: the current step's and the previous step's, which is read (and its all-reduces waited
// for) only while the current step's work is queued behind them.
struct NcclGradSync::Steps : StepRing<Step, 2> {};

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

NcclGradSync::NcclGradSync(NcclCommunicator& communicator, float* gradients, std::int64_t elements,
                           std::size_t bucket_bytes, std::size_t first_bucket_bytes, WireType wire,
                           bool measure_exposed_time, OneRankSum one_rank)
    : communicator_(communicator),
      gradients_(gradients),
      wire_(wire),
      measure_(measure_exposed_time),
      skip_(communicator.size() == 1 && one_rank == OneRankSum::Skip),
      plan_(elements, bucket_bytes, first_bucket_bytes) {
  // The events belong to the communicator's device.
  PHALANX_CUDA(cudaSetDevice(communicator_.device()));
  steps_ = std::make_unique<Steps>();
}

NcclGradSync::~NcclGradSync() = default;

void NcclGradSync::begin_step() {
  // This step reuses the events of the step before the previous one. Its sums were needed before
  // the previous step's forward on the device anyway, so the host normally finds them finished
  // (the trainer reads the previous step a step late); waiting here, with NCCL's error state
  // polled, bounds a stuck peer without draining the device's queue.
  if (steps_->reuses_older_step()) {
    Step& older = steps_->step(1);
    if (older.waited && !skip_)
      communicator_.wait_for(older.communication_end.get(), communicator_.timeout_seconds(),
                             "wait for all-reduce");
  }
  Step& step = steps_->begin_step();
  step.started = false;
  step.waited = false;
  plan_.begin_step();
}

void NcclGradSync::launch(const BucketPlan::Bucket& bucket) {
  if (skip_) return;
  Step& step = steps_->step(0);
  if (measure_ && !step.started) {
    PHALANX_CUDA(cudaSetDevice(communicator_.device()));
    PHALANX_CUDA(cudaEventRecord(step.communication_start.get(), communicator_.compute_stream()));
    step.started = true;
  }
  // A single rank has nothing to compress for: its sum is its own gradient, kept exact.
  const WireType wire = communicator_.size() > 1 ? wire_ : WireType::Float32;
  communicator_.allreduce_sum(gradients_ + bucket.begin, bucket.elements(), wire);
}

void NcclGradSync::gradients_ready(std::int64_t first_final_offset) {
  for (const std::size_t index : plan_.take_ready(first_final_offset)) launch(plan_[index]);
}

double NcclGradSync::wait() {
  const double start = now();
  PHALANX_CHECK(steps_->steps_begun() > 0, "NcclGradSync::wait before begin_step");
  Step& step = steps_->step(0);
  if (skip_) {
    step.waited = true;
    return now() - start;
  }
  communicator_.check_async_error("gradient all-reduce");
  PHALANX_CUDA(cudaSetDevice(communicator_.device()));
  if (measure_) PHALANX_CUDA(cudaEventRecord(step.backward_end.get(), communicator_.compute_stream()));
  for (const std::size_t index : plan_.take_rest()) launch(plan_[index]);
  // A step without gradients starts its (empty) communication where backward ends.
  if (measure_ && !step.started)
    PHALANX_CUDA(cudaEventRecord(step.communication_start.get(), communicator_.compute_stream()));
  PHALANX_CUDA(cudaEventRecord(step.communication_end.get(), communicator_.communication_stream()));
  communicator_.order_compute_after_communication();
  step.waited = true;
  return now() - start;
}

CommunicationSeconds NcclGradSync::read_current() {
  return read(0);
}

CommunicationSeconds NcclGradSync::read_previous() {
  return read(1);
}

void NcclGradSync::wait_current() {
  if (skip_ || !steps_->has_step(0)) return;
  Step& step = steps_->step(0);
  if (step.waited)
    communicator_.wait_for(step.communication_end.get(), communicator_.timeout_seconds(),
                           "wait for all-reduce");
}

CommunicationSeconds NcclGradSync::read(std::size_t steps_back) {
  PHALANX_CHECK(measure_, "NcclGradSync was built without measure_exposed_time");
  if (skip_ || !steps_->has_step(steps_back)) return {};
  Step& step = steps_->step(steps_back);
  if (!step.waited) return {};
  // Communication first, with NCCL's error state polled; the compute-stream events depend on
  // compute alone (and precede this step's optimizer, which waits for the communication).
  communicator_.wait_for(step.communication_end.get(), communicator_.timeout_seconds(),
                         "wait for all-reduce");
  PHALANX_CUDA(cudaEventSynchronize(step.backward_end.get()));
  PHALANX_CUDA(cudaEventSynchronize(step.communication_start.get()));
  float exposed = 0, total = 0;
  PHALANX_CUDA(cudaEventElapsedTime(&exposed, step.backward_end.get(), step.communication_end.get()));
  PHALANX_CUDA(cudaEventElapsedTime(&total, step.communication_start.get(), step.communication_end.get()));
  return {std::max(0.0, static_cast<double>(exposed) / 1e3), std::max(0.0, static_cast<double>(total) / 1e3)};
}

}  // namespace phalanx::comm
