// NcclGradSync: GradSync's bucketed all-reduce for a flat gradient buffer in GPU memory. A bucket
// is enqueued on the communication stream as soon as backward has finished it (event-ordered after
// the compute stream), and the optimizer is ordered after the sums on the device, not the host.
#pragma once

#include <cstdint>
#include <memory>

#include "phalanx/comm/bucket_plan.hpp"
#include "phalanx/comm/nccl_communicator.hpp"

namespace phalanx::comm {

// What a one-rank world does with its gradients, whose sum is the gradients themselves.
enum class OneRankSum {
  Skip,         // nothing is launched (no NCCL call, no event): a one-GPU job pays nothing
  ThroughNccl,  // the all-reduce runs anyway (tests of the machinery on one GPU)
};

// Communication of one waited step, measured by CUDA events (see read_current).
struct CommunicationSeconds {
  double exposed = 0;  // end of backward (compute stream at wait()) to the end of the last all-reduce
  double total = 0;    // first bucket's launch to the end of the last all-reduce
};

class NcclGradSync {
 public:
  // `gradients` is the flat device buffer of `elements` floats, cut into buckets by BucketPlan as
  // GradSync's is (from its end, the first of at most `first_bucket_bytes`, then `bucket_bytes` each).
  // `wire` chooses float or bf16 traffic. With `measure_exposed_time`, CUDA events time each
  // step's communication (see read_current). `communicator` must outlive this.
  NcclGradSync(NcclCommunicator& communicator, float* gradients, std::int64_t elements,
               std::size_t bucket_bytes, std::size_t first_bucket_bytes = std::size_t{1} << 20,
               WireType wire = WireType::Float32, bool measure_exposed_time = false,
               OneRankSum one_rank = OneRankSum::Skip);
  ~NcclGradSync();
  NcclGradSync(const NcclGradSync&) = delete;
  NcclGradSync& operator=(const NcclGradSync&) = delete;

  // Start of a step. Waits (bounded by the communicator's timeout, NCCL's error state polled) for
  // the all-reduces of the step before the previous one, so that a stuck or failed peer surfaces
  // as phalanx::Error instead of as a hang inside a later synchronising CUDA call. Lagged by a
  // step on purpose: the previous step's all-reduces may still run, and the device keeps the
  // previous step's tail and this step's forward queued while the host goes on; the optimizer is
  // ordered after the sums on the device (wait()), not by this wait.
  void begin_step();
  // Backward reports that every gradient at offset >= first_final_offset is final (its kernels
  // are enqueued on the compute stream); finished buckets are enqueued for all-reduce.
  void gradients_ready(std::int64_t first_final_offset);
  // Enqueues what is left and makes the compute stream wait for every sum. The host does not
  // wait for the all-reduce; returns the seconds the host spent here (enqueueing).
  double wait();

  std::size_t bucket_count() const { return plan_.size(); }
  // With measure_exposed_time: the step begun last (zeros before its wait()), and the step begun
  // before it (zeros when there is none; the next begin_step() reuses its events). Each waits,
  // bounded by the timeout with NCCL's error state polled, for that step's all-reduces only, never
  // for work queued after them. A one-rank world that skips its sum reads zeros.
  CommunicationSeconds read_current();
  CommunicationSeconds read_previous();
  // Waits as read_current() does, without measuring: for a caller about to wait for the device
  // without a bound (the fp16 finite check reads a flag computed from the sums).
  void wait_current();

  struct Step;   // one step's CUDA events (src/comm/nccl)
  struct Steps;  // the ring of them

 private:
  void launch(const BucketPlan::Bucket& bucket);
  CommunicationSeconds read(std::size_t steps_back);

  NcclCommunicator& communicator_;
  float* gradients_;
  WireType wire_;
  bool measure_ = false;
  bool skip_ = false;  // one rank, OneRankSum::Skip: nothing to launch, wait for or measure
  BucketPlan plan_;
  std::unique_ptr<Steps> steps_;
};

}  // namespace phalanx::comm
