// GradSync: sums the flat gradient buffer over the ranks in fixed-size buckets, starting each
// bucket's non-blocking all-reduce as soon as backward has finished every gradient in it, so
// communication overlaps the rest of backward (PyTorch DDP's reducer idea, on flat memory).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "phalanx/comm/communicator.hpp"

namespace phalanx::comm {

// How the gradients of a rank whose buffer is in device memory reach MPI, which reads host memory
// only (no CUDA-aware MPI assumed): each bucket is copied to a host buffer when backward finishes
// it, summed there, and copied back once its sum is done. A GPU rank in a job with CPU ranks
// (heterogeneous data-parallel, where NCCL cannot reach every rank) syncs this way; the copies are
// the Backend's, so the same code runs on a CPU backend too.
struct HostStaging {
  std::function<void(float* host_destination, const float* device_source, std::int64_t count)> to_host;
  std::function<void(float* device_destination, const float* host_source, std::int64_t count)> to_device;
};

class GradSync {
 public:
  // `gradients` is the flat buffer of `elements` floats; buckets are cut from its end (where
  // backward finishes first): the first of at most `first_bucket_bytes` (PyTorch DDP's 1 MiB),
  // so the last layers' all-reduce starts while the rest of backward runs even in small
  // models, then pieces of about `bucket_bytes`.
  GradSync(const Communicator& communicator, float* gradients, std::int64_t elements,
           std::size_t bucket_bytes, std::size_t first_bucket_bytes = std::size_t{1} << 20);
  // The same over `staging` (see HostStaging): `gradients` is then device memory.
  GradSync(const Communicator& communicator, float* gradients, std::int64_t elements,
           std::size_t bucket_bytes, HostStaging staging,
           std::size_t first_bucket_bytes = std::size_t{1} << 20);

  // Start of a step: no bucket has been launched.
  void begin_step();
  // Backward reports that every gradient at offset >= first_final_offset is final.
  void gradients_ready(std::int64_t first_final_offset);
  // Launches what is left and waits for every bucket; returns the seconds spent waiting (the
  // exposed, un-overlapped share of communication).
  double wait();

  std::size_t bucket_count() const { return buckets_.size(); }
  // Seconds from the first bucket launch to the last bucket's completion in the last step.
  double last_communication_seconds() const { return last_communication_seconds_; }

 private:
  struct Bucket {
    std::int64_t begin, end;  // element range in the gradient buffer
    Request request;
    bool launched = false;
  };
  void launch(Bucket& bucket);
  void progress();
  // Where the all-reduce of `bucket` reads and writes: the gradients, or their host copy.
  float* reduced(const Bucket& bucket) {
    return (staging_.to_host ? host_gradients_.data() : gradients_) + bucket.begin;
  }
  void stage_to_host(const Bucket& bucket);
  void stage_to_device(const Bucket& bucket);

  const Communicator& communicator_;
  float* gradients_;
  HostStaging staging_;                // empty: gradients_ is host memory, reduced in place
  std::vector<float> host_gradients_;  // the host copy when staging
  std::vector<Bucket> buckets_;        // ordered from the end of the buffer towards its start
  std::size_t next_bucket_ = 0;
  double first_launch_time_ = 0;
  double last_communication_seconds_ = 0;
};

}  // namespace phalanx::comm
