// Bucketed gradient all-reduce overlapped with backward.
#include "phalanx/comm/grad_sync.hpp"

#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx::comm {
namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

GradSync::GradSync(const Communicator& communicator, float* gradients, std::int64_t elements,
                   std::size_t bucket_bytes, std::size_t first_bucket_bytes)
    : communicator_(communicator),
      gradients_(gradients),
      plan_(elements, bucket_bytes, first_bucket_bytes),
      transfers_(plan_.size()),
      ready_times_(plan_.size(), 0.0) {}

GradSync::GradSync(const Communicator& communicator, float* gradients, std::int64_t elements,
                   std::size_t bucket_bytes, std::unique_ptr<HostStaging> staging,
                   std::size_t first_bucket_bytes)
    : GradSync(communicator, gradients, elements, bucket_bytes, first_bucket_bytes) {
  PHALANX_CHECK(staging != nullptr, "host staging needs its copies");
  staging_ = std::move(staging);
  // One rank sums nothing: its gradients stay where they are, and no copy is made.
  if (communicator_.size() > 1 && elements > 0) host_gradients_ = staging_->host_buffer(elements);
}

void GradSync::stage_to_device(std::size_t index) {
  const BucketPlan::Bucket& bucket = plan_[index];
  if (staging())
    staging_->start_to_device(index, gradients_ + bucket.begin, reduced(bucket), bucket.elements());
}

void GradSync::begin_step() {
  plan_.begin_step();
  first_launch_time_ = 0;
  for (auto& transfer : transfers_) transfer.copying = false;
}

void GradSync::launch(std::size_t index) {
  const BucketPlan::Bucket& bucket = plan_[index];
  Transfer& transfer = transfers_[index];
  ready_times_[index] = now();
  if (first_launch_time_ == 0) first_launch_time_ = ready_times_[index];
  if (communicator_.size() == 1) return;
  if (staging()) {
    // The copy runs beside the rest of backward; its all-reduce starts once it has landed.
    staging_->start_to_host(index, reduced(bucket), gradients_ + bucket.begin, bucket.elements());
    transfer.copying = true;
    return;
  }
  transfer.request = communicator_.allreduce_sum_async(reduced(bucket), bucket.elements());
}

void GradSync::start_landed_allreduces(bool wait) {
  for (const std::size_t index : plan_.started()) {
    Transfer& transfer = transfers_[index];
    if (!transfer.copying) continue;
    if (wait)
      staging_->wait_landed(index);
    else if (!staging_->landed(index))
      return;  // later buckets wait their turn: collectives start in the same order on every rank
    transfer.copying = false;
    const BucketPlan::Bucket& bucket = plan_[index];
    transfer.request = communicator_.allreduce_sum_async(reduced(bucket), bucket.elements());
  }
}

void GradSync::progress() {
  // Open MPI's non-blocking collectives advance only inside MPI calls: a test per layer keeps
  // the all-reduce moving while backward computes.
  for (const std::size_t index : plan_.started()) transfers_[index].request.test();
}

void GradSync::gradients_ready(std::int64_t first_final_offset) {
  for (const std::size_t index : plan_.take_ready(first_final_offset)) launch(index);
  if (staging()) start_landed_allreduces(false);
  progress();
}

double GradSync::wait() {
  const double start = now();
  // Staged buckets whose copies were still in flight start their all-reduce now, each right after
  // its own copy has landed.
  if (staging()) start_landed_allreduces(true);
  // A staged bucket goes back to the device as soon as its own sum is done, while later buckets
  // may still be in flight.
  for (const std::size_t index : plan_.started()) {
    transfers_[index].request.wait();
    stage_to_device(index);
  }
  // Buckets nobody launched during backward gain nothing from being non-blocking now, and
  // Open MPI's tuned blocking all-reduce is about 2x faster than its non-blocking one at
  // these sizes (bench/allreduce.cpp). The choice depends only on the layer order, so it is
  // the same every step and keeps runs bitwise reproducible.
  if (first_launch_time_ == 0) first_launch_time_ = start;
  const BucketPlan::Indices rest = plan_.take_rest();
  for (const std::size_t index : rest) ready_times_[index] = start;
  // Staged: every remaining copy is queued first, so the device copies the next bucket while the
  // host sums the current one.
  if (staging())
    for (const std::size_t index : rest) {
      const BucketPlan::Bucket& bucket = plan_[index];
      staging_->start_to_host(index, reduced(bucket), gradients_ + bucket.begin, bucket.elements());
    }
  if (communicator_.size() > 1)
    for (const std::size_t index : rest) {
      if (staging()) staging_->wait_landed(index);
      communicator_.allreduce_sum(reduced(plan_[index]), plan_[index].elements());
      stage_to_device(index);
    }
  const double end = now();
  last_communication_seconds_ = end - first_launch_time_;
  return end - start;
}

}  // namespace phalanx::comm
