// NcclGradSync: GradSync's bucketed all-reduce for a flat gradient buffer in GPU memory. A bucket
// is enqueued on the communication stream as soon as backward has finished it (event-ordered after
// the compute stream), and the optimizer is ordered after the sums on the device, not the host.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "phalanx/comm/nccl_communicator.hpp"

namespace phalanx::comm {

class NcclGradSync {
 public:
  // `gradients` is the flat device buffer of `elements` floats; buckets are cut from its end like
  // GradSync's (the first of at most `first_bucket_bytes`, then about `bucket_bytes` each).
  // `wire` chooses float or bf16 traffic. With `measure_exposed_time`, CUDA events time each
  // step's exposed communication (see last_exposed_seconds). `communicator` must outlive this.
  NcclGradSync(NcclCommunicator& communicator, float* gradients, std::int64_t elements,
               std::size_t bucket_bytes, std::size_t first_bucket_bytes = std::size_t{1} << 20,
               WireType wire = WireType::Float32, bool measure_exposed_time = false);
  ~NcclGradSync();
  NcclGradSync(const NcclGradSync&) = delete;
  NcclGradSync& operator=(const NcclGradSync&) = delete;

  // Start of a step. Waits (bounded by the communicator's timeout) for the previous step's
  // all-reduces, so that a stuck or failed peer surfaces here as phalanx::Error instead of as a
  // hang inside a later synchronising CUDA call; by now they have normally long finished.
  void begin_step();
  // Backward reports that every gradient at offset >= first_final_offset is final (its kernels
  // are enqueued on the compute stream); finished buckets are enqueued for all-reduce.
  void gradients_ready(std::int64_t first_final_offset);
  // Enqueues what is left and makes the compute stream wait for every sum. The host does not
  // wait for the all-reduce; returns the seconds the host spent here (enqueueing).
  double wait();

  std::size_t bucket_count() const { return buckets_.size(); }
  // Both measurements read the last waited step: call them after wait() and before the next
  // step's first bucket is launched (the trainer's end-of-step bookkeeping).
  // With measure_exposed_time: seconds of the last waited step from the end of backward (the
  // compute stream at wait()) to the end of the last all-reduce, 0 when communication finished
  // first. Blocks until that step's communication has finished (bounded by the timeout).
  double last_exposed_seconds();
  // With measure_exposed_time: seconds from the first bucket's launch to the end of the last
  // all-reduce in the last waited step (all communication, hidden or not).
  double last_communication_seconds();

  struct Timing;  // CUDA events of the measurement (src/comm/nccl)

 private:
  struct Bucket {
    std::int64_t begin, end;  // element range in the gradient buffer
    bool launched = false;
  };
  void launch(Bucket& bucket);

  NcclCommunicator& communicator_;
  float* gradients_;
  WireType wire_;
  std::vector<Bucket> buckets_;  // ordered from the end of the buffer towards its start
  std::size_t next_bucket_ = 0;
  bool step_waited_ = false;  // wait() ran in the current step: its events are recorded
  std::unique_ptr<Timing> timing_;
};

}  // namespace phalanx::comm
