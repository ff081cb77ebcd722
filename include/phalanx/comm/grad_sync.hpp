// GradSync: sums the flat gradient buffer over the ranks in fixed-size buckets, starting each
// bucket's non-blocking all-reduce as soon as backward has finished every gradient in it, so
// communication overlaps the rest of backward (PyTorch DDP's reducer idea, on flat memory).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "phalanx/comm/bucket_plan.hpp"
#include "phalanx/comm/communicator.hpp"

namespace phalanx::comm {

// How the gradients of a rank whose buffer is in device memory reach MPI, which reads host memory
// only (no CUDA-aware MPI assumed): each bucket's copy to a host buffer starts when backward
// finishes it, the host waits for that copy only right before the bucket's MPI call, and the sum
// goes back once it is done. A GPU rank in a job with CPU ranks (heterogeneous data-parallel,
// where NCCL cannot reach every rank) syncs this way. The copies are the device's
// (train::BackendHostStaging: the Backend's StagedCopy), so the same code runs on a CPU backend too.
class HostStaging {
 public:
  virtual ~HostStaging() = default;
  // The host copy of the whole gradient buffer, `elements` floats (called once, before any copy);
  // owned by this object.
  virtual float* host_buffer(std::int64_t elements) = 0;
  // Starts copying bucket `bucket`'s `count` floats to the host after the work that made them
  // final, and returns (at once where the device allows).
  virtual void start_to_host(std::size_t bucket, float* host_destination, const float* device_source,
                             std::int64_t count) = 0;
  // Whether bucket `bucket`'s copy to the host has landed; never waits.
  virtual bool landed(std::size_t bucket) = 0;
  // Blocks until it has landed.
  virtual void wait_landed(std::size_t bucket) = 0;
  // Starts copying the bucket's sum back, before the device work queued from now on (the
  // optimizer); the host bytes stay untouched until the bucket's next copy to the host has landed.
  virtual void start_to_device(std::size_t bucket, float* device_destination, const float* host_source,
                               std::int64_t count) = 0;
};

class GradSync {
 public:
  // `gradients` is the flat buffer of `elements` floats, cut into buckets by BucketPlan: from its
  // end, the first of at most `first_bucket_bytes` (PyTorch DDP's 1 MiB), then `bucket_bytes` each.
  GradSync(const Communicator& communicator, float* gradients, std::int64_t elements,
           std::size_t bucket_bytes, std::size_t first_bucket_bytes = std::size_t{1} << 20);
  // The same over `staging` (see HostStaging): `gradients` is then device memory.
  GradSync(const Communicator& communicator, float* gradients, std::int64_t elements,
           std::size_t bucket_bytes, std::unique_ptr<HostStaging> staging,
           std::size_t first_bucket_bytes = std::size_t{1} << 20);

  // Start of a step: no bucket has been launched.
  void begin_step();
  // Backward reports that every gradient at offset >= first_final_offset is final.
  void gradients_ready(std::int64_t first_final_offset);
  // Launches what is left and waits for every bucket; returns the seconds spent waiting (the
  // exposed, un-overlapped share of communication).
  double wait();

  std::size_t bucket_count() const { return plan_.size(); }
  // Seconds from the first bucket launch to the last bucket's completion in the last step.
  double last_communication_seconds() const { return last_communication_seconds_; }
  // When backward reported each bucket ready in the last step (steady seconds, in start order):
  // on a CPU rank the moment its gradients were final, on a staged GPU rank the moment the host
  // queued the work that makes them; the buckets left for wait() count from its start.
  const std::vector<double>& bucket_ready_times() const { return ready_times_; }

 private:
  // What is in flight for one bucket of the plan.
  struct Transfer {
    Request request;
    bool copying = false;  // staged: its copy to the host was started, its all-reduce not yet
  };
  void launch(std::size_t index);
  // Staged: starts the all-reduces of launched buckets whose copies have landed, in bucket order
  // (every rank must start its non-blocking collectives in the same order); with `wait`, blocks
  // for each copy instead of stopping at the first still in flight.
  void start_landed_allreduces(bool wait);
  void progress();
  // Where the all-reduce of `bucket` reads and writes: the gradients, or their host copy.
  float* reduced(const BucketPlan::Bucket& bucket) {
    return (host_gradients_ ? host_gradients_ : gradients_) + bucket.begin;
  }
  bool staging() const { return host_gradients_ != nullptr; }
  void stage_to_device(std::size_t index);

  const Communicator& communicator_;
  float* gradients_;
  std::unique_ptr<HostStaging> staging_;  // null: gradients_ is host memory, reduced in place
  float* host_gradients_ = nullptr;       // the host copy when staging over more than one rank
  BucketPlan plan_;
  std::vector<Transfer> transfers_;  // one for each bucket of plan_
  double first_launch_time_ = 0;
  double last_communication_seconds_ = 0;
  std::vector<double> ready_times_;  // one for each bucket of plan_
};

}  // namespace phalanx::comm
