// Bucketed gradient all-reduce overlapped with backward.
#include "phalanx/comm/grad_sync.hpp"

#include <algorithm>

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
    : communicator_(communicator), gradients_(gradients) {
  const auto to_elements = [](std::size_t bytes) {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / sizeof(float)));
  };
  const std::int64_t bucket_elements = to_elements(bucket_bytes);
  const std::int64_t first_elements = std::min(bucket_elements, to_elements(first_bucket_bytes));
  // Cut from the end: backward finishes the last layers first, so their bucket goes first.
  for (std::int64_t end = elements; end > 0;) {
    const std::int64_t size = buckets_.empty() ? first_elements : bucket_elements;
    const std::int64_t begin = std::max<std::int64_t>(0, end - size);
    buckets_.push_back(Bucket{begin, end, Request(), false, false});
    end = begin;
  }
}

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
  const Bucket& bucket = buckets_[index];
  if (staging())
    staging_->start_to_device(index, gradients_ + bucket.begin, reduced(bucket), bucket.end - bucket.begin);
}

void GradSync::begin_step() {
  next_bucket_ = 0;
  first_launch_time_ = 0;
  for (auto& bucket : buckets_) bucket.launched = bucket.copying = false;
}

void GradSync::launch(std::size_t index) {
  Bucket& bucket = buckets_[index];
  if (first_launch_time_ == 0) first_launch_time_ = now();
  bucket.launched = true;
  if (communicator_.size() == 1) return;
  if (staging()) {
    // The copy runs beside the rest of backward; its all-reduce starts once it has landed.
    staging_->start_to_host(index, reduced(bucket), gradients_ + bucket.begin, bucket.end - bucket.begin);
    bucket.copying = true;
    return;
  }
  bucket.request = communicator_.allreduce_sum_async(reduced(bucket), bucket.end - bucket.begin);
}

void GradSync::start_landed_allreduces(bool wait) {
  for (std::size_t index = 0; index < next_bucket_; ++index) {
    Bucket& bucket = buckets_[index];
    if (!bucket.copying) continue;
    if (wait)
      staging_->wait_landed(index);
    else if (!staging_->landed(index))
      return;  // later buckets wait their turn: collectives start in the same order on every rank
    bucket.copying = false;
    bucket.request = communicator_.allreduce_sum_async(reduced(bucket), bucket.end - bucket.begin);
  }
}

void GradSync::progress() {
  // Open MPI's non-blocking collectives advance only inside MPI calls: a test per layer keeps
  // the all-reduce moving while backward computes.
  for (std::size_t index = 0; index < next_bucket_; ++index) buckets_[index].request.test();
}

void GradSync::gradients_ready(std::int64_t first_final_offset) {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].begin >= first_final_offset) {
    launch(next_bucket_);
    ++next_bucket_;
  }
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
  for (std::size_t index = 0; index < next_bucket_; ++index) {
    buckets_[index].request.wait();
    stage_to_device(index);
  }
  // Buckets nobody launched during backward gain nothing from being non-blocking now, and
  // Open MPI's tuned blocking all-reduce is about 2x faster than its non-blocking one at
  // these sizes (bench/allreduce.cpp). The choice depends only on the layer order, so it is
  // the same every step and keeps runs bitwise reproducible.
  if (first_launch_time_ == 0) first_launch_time_ = start;
  // Staged: every remaining copy is queued first, so the device copies the next bucket while the
  // host sums the current one.
  if (staging())
    for (std::size_t index = next_bucket_; index < buckets_.size(); ++index) {
      const Bucket& bucket = buckets_[index];
      staging_->start_to_host(index, reduced(bucket), gradients_ + bucket.begin, bucket.end - bucket.begin);
    }
  for (; next_bucket_ < buckets_.size(); ++next_bucket_) {
    Bucket& bucket = buckets_[next_bucket_];
    bucket.launched = true;
    if (communicator_.size() > 1) {
      if (staging()) staging_->wait_landed(next_bucket_);
      communicator_.allreduce_sum(reduced(bucket), bucket.end - bucket.begin);
      stage_to_device(next_bucket_);
    }
  }
  const double end = now();
  last_communication_seconds_ = end - first_launch_time_;
  return end - start;
}

}  // namespace phalanx::comm
